"""The apply journal: commit, roll forward, discard, temp sweeping, refusal of escaping paths."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ovtui.core.errors import OvtuiError
from ovtui.storage.journal import FileOp, Journal, recover, render_manifest, sha256_text
from ovtui.storage.paths import WorkspacePaths


@pytest.fixture
def paths(tmp_path: Path) -> WorkspacePaths:
    (tmp_path / "memories" / "experiences").mkdir(parents=True)
    (tmp_path / "memories" / "experiences" / "a.md").write_text("old a", encoding="utf-8")
    (tmp_path / "memories" / "experiences" / "gone.md").write_text("old gone", encoding="utf-8")
    return WorkspacePaths(tmp_path)


def _ops() -> list[FileOp]:
    return [
        FileOp("memories/experiences/a.md", "write", "new a", sha256_text("old a")),
        FileOp("memories/experiences/b.md", "write", "new b", None),
        FileOp("memories/experiences/gone.md", "delete", None, sha256_text("old gone")),
        FileOp("history/20260101T000000000000_abcdef/memory_diff.json", "write", "{}", None),
    ]


def _manifest(journal: Journal, ops: list[FileOp], txid: str = "20260101T000000000000_abcdef") -> Path:
    """A committed-but-unfinished manifest, as a crash right after the commit point leaves it."""
    journal.dir.mkdir(parents=True, exist_ok=True)
    path = journal.dir / f"{txid}.json"
    path.write_text(render_manifest(txid, ops), encoding="utf-8")
    return path


def test_commit_performs_every_op_and_leaves_no_manifest(paths: WorkspacePaths) -> None:
    journal = Journal(paths)
    journal.commit(_ops())
    root = paths.root
    assert (root / "memories/experiences/a.md").read_text() == "new a"
    assert (root / "memories/experiences/b.md").read_text() == "new b"
    assert not (root / "memories/experiences/gone.md").exists()
    assert (root / "history/20260101T000000000000_abcdef/memory_diff.json").read_text() == "{}"
    assert journal.pending() == []
    assert list(root.rglob("*.tmp")) == []


def test_recover_rolls_forward_a_complete_manifest(paths: WorkspacePaths) -> None:
    journal = Journal(paths)
    _manifest(journal, _ops())
    # The crash happened after the first write only.
    (paths.root / "memories/experiences/a.md").write_text("new a", encoding="utf-8")
    report = recover(paths)
    assert len(report.rolled_forward) == 1 and not report.overwritten
    assert (paths.root / "memories/experiences/b.md").read_text() == "new b"
    assert not (paths.root / "memories/experiences/gone.md").exists()
    assert journal.pending() == []
    assert recover(paths).changed is False  # idempotent


def test_completed_manifest_does_not_undo_later_edits(paths: WorkspacePaths) -> None:
    journal = Journal(paths)
    journal.commit(_ops())
    # The manifest's removal was lost (crash before it reached the disk), then a person edited a file.
    _manifest(journal, _ops())
    (paths.root / "memories/experiences/b.md").write_text("edited by hand", encoding="utf-8")
    recover(paths)
    assert (paths.root / "memories/experiences/b.md").read_text() == "edited by hand"
    assert journal.pending() == []


def test_manifest_that_never_got_renamed_is_discarded(paths: WorkspacePaths) -> None:
    journal = Journal(paths)
    journal.dir.mkdir(parents=True)
    (journal.dir / ".20260101T000000000000_abcdef.json.1234.tmp").write_text('{"ops": [', encoding="utf-8")
    report = recover(paths)
    assert report.discarded and not report.rolled_forward
    assert list(journal.dir.iterdir()) == []
    assert (paths.root / "memories/experiences/a.md").read_text() == "old a"


def test_corrupt_manifest_is_set_aside_not_replayed(paths: WorkspacePaths) -> None:
    journal = Journal(paths)
    path = _manifest(journal, _ops())
    path.write_text(path.read_text().replace("new b", "evil"), encoding="utf-8")
    report = recover(paths)
    assert report.discarded and not report.rolled_forward
    assert not (paths.root / "memories/experiences/b.md").exists()
    assert path.with_suffix(".discarded").exists()


def test_temp_files_of_the_interrupted_targets_are_removed(paths: WorkspacePaths) -> None:
    journal = Journal(paths)
    _manifest(journal, _ops())
    folder = paths.root / "memories/experiences"
    (folder / ".a.md.abc123.tmp").write_text("half", encoding="utf-8")
    fresh_foreign = folder / ".other.md.def456.tmp"  # a live writer's temp: young, not ours
    fresh_foreign.write_text("in progress", encoding="utf-8")
    stale_foreign = folder / ".old.md.0badc0de.tmp"
    stale_foreign.write_text("left behind", encoding="utf-8")
    an_hour_ago = time.time() - 3600
    os.utime(stale_foreign, (an_hour_ago, an_hour_ago))
    report = recover(paths)
    assert not (folder / ".a.md.abc123.tmp").exists()
    assert fresh_foreign.exists() and not stale_foreign.exists()
    assert "memories/experiences/.old.md.0badc0de.tmp" in report.removed_temps


@pytest.mark.parametrize(
    "rel", ["../outside.md", "/etc/passwd", "memories/../../x", "memories/./x", "a\x00b", "", "memories\\x"]
)
def test_escaping_targets_are_refused(paths: WorkspacePaths, rel: str) -> None:
    with pytest.raises(OvtuiError, match="invalid target path"):
        Journal(paths).commit([FileOp(rel, "write", "x", None)])
    assert Journal(paths).pending() == []


def test_symlinked_folder_leading_outside_is_refused(
    paths: WorkspacePaths, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (paths.root / "memories" / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(OvtuiError, match="outside the workspace"):
        Journal(paths).commit([FileOp("memories/linked/x.md", "write", "x", None)])
    assert list(outside.iterdir()) == []
