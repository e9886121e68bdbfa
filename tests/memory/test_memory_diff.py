"""memory_diff.json records: classification, the no-op filter, the schema, round trip."""

from __future__ import annotations

import json

from repo_paths import REPO

from ovtui.core.decisions import ReviewDecision
from ovtui.core.fileformat import render_memory
from ovtui.memory.memory_diff import (
    FileChange,
    MemoryDiff,
    Review,
    build_memory_diff,
    same_memory,
)

URI = "viking://user/default/memories/experiences/x.md"


def test_changes_are_classified_and_counted() -> None:
    changes = [
        FileChange(URI, "experiences", None, render_memory("new", {"version": 1})),
        FileChange(
            URI + "2", "experiences", render_memory("a", {"version": 1}), render_memory("b", {"version": 2})
        ),
        FileChange(URI + "3", "experiences", render_memory("gone", {"version": 4}), None),
    ]
    record = build_memory_diff(changes, trace_id="t1", archive_uri="viking://x")
    assert [o.uri for o in record.operations.adds] == [URI]
    assert record.operations.updates[0].before.startswith("a\n")
    assert record.operations.deletes[0].deleted_content.startswith("gone")
    assert (record.summary.total_adds, record.summary.total_updates, record.summary.total_deletes) == (
        1,
        1,
        1,
    )


def test_update_differing_only_in_version_and_trace_fields_is_filtered() -> None:
    before = render_memory("same", {"version": 1, "trace_id": "a", "tags": ["x"]})
    after = render_memory("same", {"version": 2, "trace_id": "b", "updated_at": "now", "tags": ["x"]})
    assert same_memory(before, after)
    record = build_memory_diff([FileChange(URI, "experiences", before, after)])
    assert record.summary.total_updates == 0 and record.operations.updates == []
    changed = render_memory("same", {"version": 2, "tags": ["y"]})
    assert not same_memory(before, changed)


def test_empty_record_has_the_full_schema() -> None:
    record = build_memory_diff([], kind="dry_run", trace_id="t")
    data = json.loads(record.render())
    assert set(data) >= {
        "archive_uri",
        "trace_id",
        "extracted_at",
        "operations",
        "skipped_operations",
        "summary",
        "review",
        "kind",
    }
    assert data["operations"] == {"adds": [], "updates": [], "deletes": []}
    assert data["skipped_operations"] == []  # OpenViking's key, empty when nothing was skipped
    assert data["summary"] == {"total_adds": 0, "total_updates": 0, "total_deletes": 0, "total_skipped": 0}
    assert data["review"]["dry_run"] is True and data["extracted_at"].endswith("+00:00")


def test_record_round_trips_and_keeps_unknown_keys() -> None:
    review = Review(plan_id="p", decisions=[ReviewDecision(item=0, decision="approved", note="ok")])
    record = build_memory_diff([], review=review, reverts="20260101T000000000000_abcdef", kind="revert")
    data = json.loads(record.render())
    data["openviking_extra"] = {"session": "s1"}
    again = MemoryDiff.model_validate(data)
    assert again.reverts == record.reverts and again.review == record.review
    assert json.loads(again.render())["openviking_extra"] == {"session": "s1"}


OPENVIKING_DIFF = (
    REPO / "tests/fixtures/openviking/sessions/refund_train_3/history/archive_001/memory_diff.json"
)


def test_the_file_holds_what_openviking_writes_and_reads_back_whole() -> None:
    """OpenViking 0.5.2's record (its fixture): ``after``/``before``/``deleted_content`` the
    body, ``trace_id`` null, ``extracted_at`` ``+00:00``. ovtui's record in its file has the same
    keys and values of those kinds; its trailers and trace id sit beside them and come back whole."""
    added = render_memory("## Situation\n- new", {"version": 1, "experience_name": "x"})
    before, after = render_memory("a\r\nb", {"version": 1}), render_memory("c", {"version": 2})
    gone = render_memory("gone", {"version": 4})
    changes = [
        FileChange(URI, "experiences", None, added),
        FileChange(URI + "2", "experiences", before, after),
        FileChange(URI + "3", "experiences", gone, None),
        FileChange(URI + "4", "experiences", None, "no trailer at all"),
    ]
    record = build_memory_diff(changes, trace_id="s1/archive_001")
    data = json.loads(record.render())
    theirs = json.loads(OPENVIKING_DIFF.read_text())
    assert data["trace_id"] is None and theirs["trace_id"] is None
    assert data["ovtui_trace_id"] == "s1/archive_001"
    assert data["extracted_at"].endswith("+00:00") and theirs["extracted_at"].endswith("+00:00")
    ops = data["operations"]
    assert ops["adds"][0]["after"] == "## Situation\n- new"  # the body, as OpenViking's
    assert all("MEMORY_FIELDS" not in o["after"] for o in theirs["operations"]["adds"])
    assert "MEMORY_FIELDS" not in json.dumps(
        {k: v for o in ops["adds"] + ops["updates"] for k, v in o.items() if k in ("after", "before")}
    )
    assert ops["deletes"][0]["deleted_content"] == "gone"
    assert ops["adds"][0]["after"] + ops["adds"][0]["after_trailer"] == added
    assert ops["adds"][1] == {"uri": URI + "4", "memory_type": "experiences", "after": "no trailer at all"}
    back = MemoryDiff.model_validate_json(record.render())
    assert back.trace_id == "s1/archive_001"
    assert [o.after for o in back.operations.adds] == [added, "no trailer at all"]
    assert (back.operations.updates[0].before, back.operations.updates[0].after) == (before, after)
    assert back.operations.deletes[0].deleted_content == gone
    assert back.render() == record.render()
    # OpenViking's own record reads as it is (bodies, no trailer keys)
    read = MemoryDiff.model_validate_json(OPENVIKING_DIFF.read_text())
    assert read.operations.adds[0].after == theirs["operations"]["adds"][0]["after"]
    assert read.trace_id == ""


def test_a_record_of_an_older_ovtui_reads_as_it_did() -> None:
    whole = render_memory("body", {"version": 1})
    old = {
        "trace_id": "t0",
        "extracted_at": "2026-01-01T00:00:00Z",
        "operations": {"adds": [{"uri": URI, "after": whole}]},
    }
    record = MemoryDiff.model_validate(old)
    assert record.trace_id == "t0" and record.operations.adds[0].after == whole
