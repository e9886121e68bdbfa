"""Bad files are reported by name and never modified: not by loading, not by an apply, not by check."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from plan_support import append_line, apply, upsert
from workspace_support import PREFIX

from ovtui.checks.workspace import check_workspace
from ovtui.core.domain import PolicyPlanItem
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import MAX_MEMORY_FILE_BYTES, PENDING_FOLDER
from ovtui.train.components.experience_set_loader import ExperienceSetLoader

GOOD_BODY = "## Situation\n- x\n\n"


def _write_broken_json(path: Path) -> None:
    path.write_text(
        GOOD_BODY + '<!-- MEMORY_FIELDS\n{\n  "experience_name": "broken",\n  "version": 2,\n}\n-->\n'
    )


def _write_non_utf8(path: Path) -> None:
    path.write_bytes(b"## Situation\n- caf\xe9 au lait\n")


def _write_binary(path: Path) -> None:
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")


def _write_huge(path: Path) -> None:
    with path.open("wb") as handle:  # sparse: instant, and no disk space used
        handle.truncate(50 * 1024 * 1024)


CASES = [
    ("broken", _write_broken_json, "broken.md:8: MEMORY_FIELDS is not valid JSON"),
    ("latin1", _write_non_utf8, "latin1.md:2: is not valid UTF-8"),
    ("image", _write_binary, "contains NUL bytes"),
    ("huge", _write_huge, f"larger than the {MAX_MEMORY_FILE_BYTES} byte limit"),
]


@pytest.mark.parametrize(("name", "write", "message"), CASES, ids=[c[0] for c in CASES])
def test_bad_experience_is_reported_and_never_modified(
    store: MemoryStore, name: str, write: Callable[[Path], None], message: str
) -> None:
    path = store.paths.root / "memories" / "experiences" / f"{name}.md"
    write(path)
    os.utime(path, (1_000_000_000, 1_000_000_000))
    stat_before = path.stat()
    head_before = path.open("rb").read(4096)

    policy_set = ExperienceSetLoader(store).load_sync()
    assert name not in policy_set.by_name() and len(policy_set.policies) == 3
    assert any(message in problem for problem in policy_set.metadata["problems"]), policy_set.metadata

    result = apply(
        store,
        PolicyPlanItem(kind="upsert", target_name=name, base_version=1, after_content="x"),
        PolicyPlanItem(kind="delete", target_name=name, base_version=1),
        append_line(store, "refund_status", "- still applied"),
    )
    assert [e.item for e in result.item_errors] == [0, 1]
    assert all(f"memories/experiences/{name}.md" in e.message and not e.stale for e in result.item_errors)
    assert len(result.written_uris) == 1

    report = check_workspace(store)
    assert [p.path for p in report.problems] == [f"memories/experiences/{name}.md"]
    assert message.split(".md")[-1] in str(report.problems[0])

    stat_after = path.stat()
    assert (stat_after.st_size, stat_after.st_mtime_ns) == (stat_before.st_size, stat_before.st_mtime_ns)
    assert path.open("rb").read(4096) == head_before


def test_bad_trajectory_as_evidence_is_skipped_and_untouched(store: MemoryStore) -> None:
    path = store.paths.root / "memories" / "trajectories" / "garbled_20260101000000.md"
    _write_broken_json(path)
    before = path.read_bytes()
    uri = f"{PREFIX}memories/trajectories/garbled_20260101000000.md"
    result = apply(store, upsert(store, "new_rule", "text", evidence=[uri]))
    assert result.written_uris and not result.errors
    assert any("garbled_20260101000000.md" in w for w in result.metadata["warnings"])
    assert path.read_bytes() == before


def test_a_pending_plan_file_that_is_not_a_plan_is_named_by_check(store: MemoryStore) -> None:
    # Review and `ovtui review` skip it (it stays on disk): only check can tell the person about it.
    pending = store.paths.root / PENDING_FOLDER
    pending.mkdir(parents=True, exist_ok=True)
    (pending / "zz.json").write_text("{broken")
    (pending / "settled").mkdir(exist_ok=True)
    (pending / "settled" / "old.json").write_text("{}")  # settled plans are history, not checked
    report = check_workspace(store)
    assert [str(p).split(": ", 1)[0] for p in report.problems] == [f"{PENDING_FOLDER}/zz.json:1"]
    assert "not a pending plan" in report.problems[0].message
