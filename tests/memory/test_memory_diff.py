"""memory_diff.json records: classification, the no-op filter, the schema, round trip."""

from __future__ import annotations

import json

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
    assert data["review"]["dry_run"] is True and data["extracted_at"].endswith("Z")


def test_record_round_trips_and_keeps_unknown_keys() -> None:
    review = Review(plan_id="p", decisions=[ReviewDecision(item=0, decision="approved", note="ok")])
    record = build_memory_diff([], review=review, reverts="20260101T000000000000_abcdef", kind="revert")
    data = json.loads(record.render())
    data["openviking_extra"] = {"session": "s1"}
    again = MemoryDiff.model_validate(data)
    assert again.reverts == record.reverts and again.review == record.review
    assert json.loads(again.render())["openviking_extra"] == {"session": "s1"}
