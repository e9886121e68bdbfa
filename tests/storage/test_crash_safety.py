"""Crash safety: SIGKILL a real process after each low-level write step of a multi-file apply.

After every kill, recovery must leave either the whole apply (all files, the record) or nothing,
with no truncated file and no temp file. A reference run (same plan, same clock) tells what
"the whole apply" looks like.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from plan_support import append_line, delete, fixed_clock, killed_copy, snapshot, temp_files, upsert
from workspace_support import build_workspace, trajectory_uri

from ovtui.core.context import ApplyOptions
from ovtui.core.domain import PolicyUpdatePlan
from ovtui.core.fileformat import parse_memory
from ovtui.memory.chain import ChainVerifier
from ovtui.memory.history import HistoryStore
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.memory.store import MemoryStore
from ovtui.storage import fsio
from ovtui.storage.journal import recover
from ovtui.train.components.policy_updater import MemoryFilePolicyUpdater

# (template root, files before, files after, the record's body, how many steps an apply takes)
Reference = tuple[Path, dict[str, bytes], dict[str, bytes], dict[str, Any], int]
CONTEXT = ApplyOptions(plan_id="crash-plan", trace_id="crash-trace")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork are POSIX")


def _plan(store: MemoryStore) -> PolicyUpdatePlan:
    """Two updates, a create, a delete and backlinks on two trajectories: seven files and a record."""
    evidence = [
        trajectory_uri("refund_lookup_20261129120500"),
        trajectory_uri("cancel_reservation_20261129120000"),
    ]
    return PolicyUpdatePlan(
        items=[
            append_line(store, "refund_status", "- crash-tested rule", evidence=evidence),
            append_line(store, "reservation_cancellation", "- another rule", evidence=evidence[:1]),
            upsert(store, "gift_cards", "## Situation\n- gift cards"),
            delete(store, "address_change"),
        ]
    )


def _apply(root: str) -> None:
    store = MemoryStore.open(root)
    asyncio.run(MemoryFilePolicyUpdater(store, clock=fixed_clock).apply(_plan(store), None, CONTEXT))


def _child(root: str, crash_after: int) -> None:
    fsio.set_crash_after(crash_after)
    try:
        _apply(root)
    finally:
        os._exit(3)  # reached only when the crash point was never hit (or the apply raised)


def _record_body(record: MemoryDiff) -> dict[str, object]:
    return record.model_dump(include={"operations", "summary", "review", "kind", "trace_id", "extracted_at"})


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Reference:
    """(template root, files before, files after, the record's body, how many steps an apply takes)."""
    base = tmp_path_factory.mktemp("crash")
    template = build_workspace(base / "template")
    before = snapshot(template)
    done = base / "reference"
    shutil.copytree(template, done)
    fsio.set_crash_after(10**9)  # count steps without ever crashing
    try:
        _apply(str(done))
        steps = fsio.steps_taken()
    finally:
        fsio.set_crash_after(None)
    history = HistoryStore(MemoryStore.open(done).paths)
    (entry,) = history.list()
    return template, before, snapshot(done), _record_body(history.get(entry.id)), steps


def _check_all_or_nothing(
    root: Path, before: dict[str, bytes], after: dict[str, bytes], record: dict[str, Any]
) -> str:
    store = MemoryStore.open(root)
    with store.lock.hold("test recovery"):
        recover(store.paths)
    files = snapshot(root)
    assert temp_files(root) == []
    for rel, data in files.items():
        parse_memory(data.decode("utf-8"), source=rel)  # nothing truncated or torn
    entries = HistoryStore(store.paths).list()
    chain = ChainVerifier(store).verify()
    assert chain.ok, chain.problems  # the record and the chain's head are one transaction
    if files == before:
        assert entries == []
        return "none"
    assert files == after, "a partial apply survived recovery"
    assert len(entries) == 1
    assert _record_body(HistoryStore(store.paths).get(entries[0].id)) == record
    return "all"


def test_sigkill_at_every_step_is_all_or_nothing(tmp_path: Path, reference: Reference) -> None:
    template, before, after, record, steps = reference
    assert steps >= 20  # manifest, 7 targets and the record, folder syncs, index line
    outcomes: list[str] = []
    for crash_after in range(1, steps + 1):
        root = tmp_path / f"run{crash_after}"
        killed_copy(template, root, _child, crash_after)
        outcomes.append(_check_all_or_nothing(root, before, after, record))
        shutil.rmtree(root)
    # Early kills leave nothing, kills after the commit point leave everything.
    assert outcomes[0] == "none" and outcomes[-1] == "all"
    assert outcomes == sorted(outcomes, key=["none", "all"].index)


CHILD = textwrap.dedent(
    """
    import sys
    sys.path[:0] = sys.argv[2:]
    from test_crash_safety import _apply
    _apply(sys.argv[1])
    """
)


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.9])
def test_sigkill_of_a_separate_interpreter(tmp_path: Path, reference: Reference, fraction: float) -> None:
    """The same through the environment hook, in a freshly started interpreter."""
    template, before, after, record, steps = reference
    root = tmp_path / "ws"
    shutil.copytree(template, root)
    env = {**os.environ, fsio.CRASH_ENV: str(max(1, int(steps * fraction)))}
    here = Path(__file__).resolve()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(here.parent), str(here.parent.parent)],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    _check_all_or_nothing(root, before, after, record)
