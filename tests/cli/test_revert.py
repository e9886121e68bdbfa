"""``ovtui revert`` in a real process: a sequence undone newest first, and a record undone twice."""

from __future__ import annotations

from pathlib import Path

from cli_support import run_ovtui
from plan_support import append_line, apply, snapshot, upsert

from ovtui.memory.store import MemoryStore


def test_undo_a_sequence_newest_first_then_once_more(tmp_workspace: Path, store: MemoryStore) -> None:
    original = snapshot(tmp_workspace)
    ids = [
        apply(store, upsert(store, "gift_cards", "gift cards")).history_id,
        apply(store, append_line(store, "gift_cards", "- quote the balance")).history_id,
        apply(store, append_line(store, "gift_cards", "- never read out the code")).history_id,
    ]
    reverts = []
    for record_id in reversed(ids):
        proc = run_ovtui("revert", str(record_id), "-w", str(tmp_workspace), cwd=tmp_workspace.parent)
        assert proc.returncode == 0, proc.stderr
        reverts.append(proc.stdout.split("record ")[-1].split()[0])
    assert snapshot(tmp_workspace) == original  # the file the first record added is gone again
    again = run_ovtui("revert", str(ids[0]), "-w", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert again.returncode == 2
    assert (
        again.stderr.strip() == f"ovtui: error: history record {ids[0]} is already reverted by {reverts[-1]}"
    )


def test_a_conflict_names_the_file_and_the_force_option(tmp_workspace: Path, store: MemoryStore) -> None:
    first = apply(store, append_line(store, "refund_status", "- one")).history_id
    apply(store, append_line(store, "refund_status", "- two"))
    proc = run_ovtui("revert", str(first), "-w", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert proc.returncode == 2
    assert "memories/experiences/refund_status.md" in proc.stderr and "(use --force" in proc.stderr
