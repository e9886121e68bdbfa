"""The workspace lock between separate processes: no lost update, and a timeout that names the holder."""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from plan_support import apply, cas_append_worker, experience, upsert

from ovtui.core.context import ApplyOptions
from ovtui.core.errors import LockTimeoutError
from ovtui.memory.history import HistoryStore
from ovtui.memory.store import MemoryStore

WORKERS = 4
APPLIES = 50
SHARED = "shared_rules"


def test_four_processes_appending_lose_no_update(store: MemoryStore) -> None:
    apply(store, upsert(store, SHARED, "## Approach"))
    start = experience(store, SHARED)
    assert start is not None and start.version == 1
    context = multiprocessing.get_context("spawn")
    with context.Pool(WORKERS) as pool:
        results = pool.starmap(
            cas_append_worker, [(str(store.paths.root), w, APPLIES, SHARED) for w in range(WORKERS)]
        )
    written = sum(r[0] for r in results)
    final = experience(store, SHARED)
    assert final is not None
    assert written == WORKERS * APPLIES
    assert final.version == 1 + written
    lines = final.content.splitlines()
    for worker in range(WORKERS):
        for n in range(APPLIES):
            assert lines.count(f"- worker {worker} line {n}") == 1
    # One record per apply that changed the file (a refused, stale one changes nothing: no record).
    entries = HistoryStore(store.paths).list()
    assert sum(e.updates for e in entries) == written
    assert len(entries) == 1 + written


HOLDER = textwrap.dedent(
    """
    import sys
    from ovtui.memory.store import MemoryStore
    store = MemoryStore.open(sys.argv[1])
    with store.lock.hold("test holder keeps the lock"):
        print("ready", flush=True)
        sys.stdin.read()
    """
)


def test_lock_timeout_names_the_other_process(store: MemoryStore, tmp_workspace: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        before = sorted(p.name for p in (tmp_workspace / "memories" / "experiences").iterdir())
        with pytest.raises(LockTimeoutError) as caught:
            apply(store, upsert(store, "blocked", "x"), options=ApplyOptions(lock_timeout=0.2))
        message = str(caught.value)
        assert f"pid {holder.pid}" in message and "test holder keeps the lock" in message
        assert sorted(p.name for p in (tmp_workspace / "memories" / "experiences").iterdir()) == before
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(30)
    # Released with the process: the next apply goes through.
    assert apply(store, upsert(store, "blocked", "x")).written_uris
