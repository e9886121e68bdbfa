"""``ovtui history verify``, ``check`` and ``revert --force`` in a real process, against a history
record tampered with to write outside the memories (issue 32's attack)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_ovtui
from plan_support import append_line, apply, snapshot

from ovtui.memory.chain import canonical_digest
from ovtui.memory.history import HistoryStore
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import HISTORY_CHAIN_FILE, LOCK_HOLDER_FILE

TARGETS = ["viking://user/default/ovtui.toml", "viking://user/default/.ovtui/journal/x.md"]


def _retarget(store: MemoryStore, record_id: str, uri: str, *, reseal: bool) -> str:
    """Point the record's update at ``uri``; ``reseal``: as an attacker who also recomputes the
    record's digest and the chain's head, so only the write rule stands in the way."""
    path = HistoryStore(store.paths).record_path(record_id)
    data = json.loads(path.read_text())
    data["operations"]["updates"][0]["uri"] = uri
    if reseal:
        data["chain"]["digest"] = canonical_digest(data)
        head_path = store.paths.root / HISTORY_CHAIN_FILE
        head = json.loads(head_path.read_text())
        head["digest"] = data["chain"]["digest"]
        head_path.write_text(json.dumps(head))
    path.write_text(json.dumps(data, indent=2))
    return f"history/{record_id}/memory_diff.json"


def _outside_memories(root: Path) -> dict[str, bytes]:
    """Every file outside the memories but the lock's note of who held it last."""
    files = {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}
    return {
        rel: p.read_bytes()
        for rel, p in files.items()
        if not rel.startswith("memories/") and rel != LOCK_HOLDER_FILE
    }


@pytest.mark.parametrize("reseal", [False, True], ids=["edited", "edited-and-resealed"])
@pytest.mark.parametrize("uri", TARGETS, ids=["config", "journal"])
def test_a_tampered_record_is_refused_by_revert_force(
    tmp_workspace: Path, store: MemoryStore, uri: str, reseal: bool
) -> None:
    record_id = str(apply(store, append_line(store, "refund_status", "- one")).history_id)
    apply(store, append_line(store, "refund_status", "- two"))  # a conflict --force would override
    where = _retarget(store, record_id, uri, reseal=reseal)
    outside, memories = _outside_memories(tmp_workspace), snapshot(tmp_workspace)

    proc = run_ovtui("revert", record_id, "--force", "-w", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"ovtui: error: cannot revert {record_id}, not even with --force: {where}: ")
    assert _outside_memories(tmp_workspace) == outside and snapshot(tmp_workspace) == memories
    assert not (tmp_workspace / ".ovtui/journal/x.md").exists()

    verify = run_ovtui("history", "verify", "-w", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert verify.returncode == 1
    rel = uri.removeprefix("viking://user/default/")
    assert f"{where}: targets {uri}, which no record may write: {rel} is not a memory file" in verify.stdout
    edited = f"{where}: edited after it was written (its digest does not match)"
    assert (edited in verify.stdout) is not reseal
    check = run_ovtui("check", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert check.returncode == 1 and f"{where}:1: targets {uri}" in check.stdout


def test_verify_passes_a_clean_history_and_says_so(tmp_workspace: Path, store: MemoryStore) -> None:
    apply(store, append_line(store, "refund_status", "- one"))
    proc = run_ovtui("history", "verify", "--json", "-w", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"ok": True, "chained": 1, "earlier": 0, "problems": []}
