"""Helpers for tests of the write path: plan items planned against the files as they are now."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import shutil
import signal
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ovtui.core.context import ApplyOptions
from ovtui.core.domain import PolicyApplyResult, PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.store import MemoryStore
from ovtui.storage import fsio
from ovtui.train.components.policy_updater import MemoryFilePolicyUpdater
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision

FIXED_NOW = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def fixed_clock() -> datetime:
    return FIXED_NOW


def experience(store: MemoryStore, name: str) -> MemoryFile | None:
    return store.read_uri(store.uri_for_name("experiences", name))


def upsert(
    store: MemoryStore,
    name: str,
    after: str,
    *,
    evidence: Iterable[str] = (),
    current: MemoryFile | None = None,
    **extra: Any,
) -> PolicyPlanItem:
    """An upsert planned against ``current`` (default: the file now; a create when it does not exist)."""
    current = current or experience(store, name)
    return PolicyPlanItem(
        kind="upsert",
        target_name=name,
        before_content=None if current is None else current.content,
        base_version=None if current is None else current.version,
        after_content=after,
        evidence_trajectory_uris=list(evidence),
        **extra,
    )


def append_line(store: MemoryStore, name: str, line: str, **extra: Any) -> PolicyPlanItem:
    current = experience(store, name)
    assert current is not None, name
    # Planned against the very text it extends: reading the file twice could mix two versions.
    return upsert(store, name, f"{current.content}\n{line}", current=current, **extra)


def delete(store: MemoryStore, name: str) -> PolicyPlanItem:
    current = experience(store, name)
    assert current is not None, name
    return PolicyPlanItem(
        kind="delete",
        target_name=name,
        before_content=current.content,
        base_version=current.version,
    )


async def apply_async(
    store: MemoryStore, *items: PolicyPlanItem, options: ApplyOptions | None = None, **kwargs: Any
) -> PolicyApplyResult:
    """``items`` applied as one plan by the product's updater (its async ``apply``, lock and all)."""
    updater = MemoryFilePolicyUpdater(store, **kwargs)
    return await updater.apply(PolicyUpdatePlan(items=list(items)), None, options)


def apply(
    store: MemoryStore, *items: PolicyPlanItem, options: ApplyOptions | None = None, **kwargs: Any
) -> PolicyApplyResult:
    """``apply_async`` for a test that runs no event loop of its own."""
    return asyncio.run(apply_async(store, *items, options=options, **kwargs))


def snapshot(root: Path, folder: str = "memories") -> dict[str, bytes]:
    """Every file under ``root/folder`` by relative path (temp files included, so leftovers show)."""
    base = root / folder
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(base.rglob("*")) if p.is_file()}


def temp_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob(".*.tmp"))


def cas_append_worker(root: str, worker: int, count: int, name: str) -> tuple[int, int]:
    """Append ``count`` unique lines to one experience, re-planning whenever an apply is stale.

    Runs in a separate process; planning reads without the lock, as the engine does."""
    store = MemoryStore.open(root, lock_timeout=120.0)
    updater = MemoryFilePolicyUpdater(store)

    async def append_all() -> tuple[int, int]:
        written = stale = 0
        for n in range(count):
            while True:
                item = append_line(store, name, f"- worker {worker} line {n}")
                result = await updater.apply(PolicyUpdatePlan(items=[item]), None)
                if result.written_uris:
                    written += 1
                    break
                assert [e.stale for e in result.item_errors] == [True], result.errors
                stale += 1
        return written, stale

    return asyncio.run(append_all())


def until_killed(root: str, crash_after: int, action: Callable[[str], object]) -> None:
    """A ``killed_copy`` child's body: ``action(root)`` with a SIGKILL after ``crash_after`` write
    steps; exit code 3 when it ended before that crash point."""
    fsio.set_crash_after(crash_after)
    try:
        action(root)
    finally:
        os._exit(3)


def killed_copy(template: Path, root: Path, child: Callable[[str, int], None], crash_after: int) -> None:
    """Copy ``template`` to ``root`` and run ``child(root, crash_after)`` in a forked process that
    must die by SIGKILL at that crash point (``fsio.set_crash_after``)."""
    shutil.copytree(template, root)
    process = multiprocessing.get_context("fork").Process(target=child, args=(str(root), crash_after))
    process.start()
    process.join(60)
    assert process.exitcode == -signal.SIGKILL, f"step {crash_after}: exit code {process.exitcode}"


def park_peer_preference(pending: PendingPlans) -> None:
    """Park plan ``plansession1``: a session's new preference for peer alice. It names no file: the
    plan finds it by name at apply time."""
    item = PolicyPlanItem(
        kind="upsert",
        memory_type="preferences",
        target_name="aisle_seats",
        after_content="- I prefer aisle seats",
        peer_id="alice",
    )
    plan = PolicyUpdatePlan(items=[item], metadata={"plan_id": "plansession1"})
    pending.park(plan, [ItemDecision(item=0)])
