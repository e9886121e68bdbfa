"""User memories of session commits (profile, preferences, entities, cases): the StreamingMemoryUpdater.

Extracted memories from concurrent commits are queued and written in batches — when
``max_operations`` are waiting, when the oldest has waited ``max_wait_seconds``, on close, and at
once when no other commit is still extracting (a lone commit never waits out a window). A batch is
merged per target file (several sessions adding to ``profile.md`` make one edit) and becomes one plan
of generic memory-type items, so files, compare-and-swap, the journal, History and revert are the
same as for experiences. By default the plan is applied at once (as OpenViking does) and recorded
as a ``session_commit`` record; with ``[sessions] review_user_memories`` it is parked for Review.

Merging: a patch-merged field (``content``) gets the lines it does not hold yet, in order; an
add-only type (cases) is written once and an existing file is left alone. A peer's memory (routed
by ``sessions.peers``) goes to the peer's space, ``peers/<peer_id>/…``: a file per (type, name,
category, peer), so one peer's profile and the user's are different files.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from ovtui.components.policy_updater import MemoryFilePolicyUpdater
from ovtui.context import ApplyOptions
from ovtui.domain import Case, PolicyPlanItem, PolicyUpdatePlan
from ovtui.errors import OvtuiError
from ovtui.memory.cases import memory_from_case
from ovtui.memory.types import CASES
from ovtui.pending_store import PendingPlans
from ovtui.review import ItemDecision
from ovtui.sessions.extract import ExtractedMemory
from ovtui.workspace.store import MemoryStore
from ovtui.workspace.targets import plan_target

RESERVED = frozenset({"content", "memory_type", "version", "links", "backlinks"})


@dataclass
class WriteResult:
    history_id: str | None = None
    pending_plan: str | None = None
    written: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class _Submission:
    memories: list[ExtractedMemory]
    archive_uri: str
    future: asyncio.Future[WriteResult]
    at: float = field(default_factory=time.monotonic)


def case_memory(case: Case) -> ExtractedMemory:
    memory = memory_from_case(case)
    fields = {k: v for k, v in memory.fields.items() if k not in RESERVED and v is not None}
    return ExtractedMemory(CASES, case.name, {**fields, "content": memory.content})


MemoryKey = tuple[str, str | None, str, str | None]


def _key(memory: ExtractedMemory) -> MemoryKey:
    """The file a memory goes to: its type, name, category and whose space (a peer's, or None)."""
    return memory.memory_type, memory.name, str(memory.fields.get("category", "")), memory.peer_id


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


class StreamingMemoryUpdater:
    def __init__(
        self,
        store: MemoryStore,
        pending: PendingPlans,
        *,
        max_operations: int = 8,
        max_wait_seconds: float = 10.0,
        review: bool = False,
    ) -> None:
        self.store = store
        self.pending = pending
        self.max_operations = max_operations
        self.max_wait_seconds = max_wait_seconds
        self.review = review
        self.updater = MemoryFilePolicyUpdater(store)
        self._queue: list[_Submission] = []
        self._flush_lock = asyncio.Lock()
        self._extracting = 0
        self._timer: asyncio.Task[None] | None = None

    # --- the commits tell it when they extract, so it knows when the queue is idle ---------------
    def begin(self) -> None:
        self._extracting += 1

    def end(self) -> None:
        self._extracting -= 1

    async def submit(self, memories: list[ExtractedMemory], archive_uri: str) -> WriteResult:
        """Queue one commit's memories; returns what the batch holding them did."""
        if not memories:
            await self.flush_if_idle()
            return WriteResult()
        future: asyncio.Future[WriteResult] = asyncio.get_running_loop().create_future()
        self._queue.append(_Submission(memories, archive_uri, future))
        waiting = sum(len(s.memories) for s in self._queue)
        if waiting >= self.max_operations or self._extracting == 0:
            await self._flush()
        elif self._timer is None or self._timer.done():
            self._timer = asyncio.create_task(self._after_wait())
        return await future

    async def flush_if_idle(self) -> None:
        """Write what waits when no commit is extracting any more (the last one had nothing to add,
        or failed): the others must not wait out the window for it."""
        if self._queue and self._extracting == 0:
            await self._flush()

    async def _after_wait(self) -> None:
        await asyncio.sleep(self.max_wait_seconds)
        await self._flush()

    async def close(self) -> None:
        await self._flush()
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer

    async def _flush(self) -> None:
        async with self._flush_lock:
            batch, self._queue = self._queue, []
            if not batch:
                return
            try:
                result = await self._write(batch)
            except Exception as exc:
                for submission in batch:
                    if not submission.future.done():
                        submission.future.set_exception(exc)
                return
            for submission in batch:
                if not submission.future.done():
                    submission.future.set_result(result)

    # --- one batch --------------------------------------------------------------------------
    async def _write(self, batch: list[_Submission]) -> WriteResult:
        plan = await asyncio.to_thread(self.plan, [m for s in batch for m in s.memories])
        result = WriteResult(errors=list(plan.metadata.pop("errors", [])))
        if not plan.items:
            return result
        plan.metadata.update(
            plan_id=uuid.uuid4().hex[:12],
            source="session_commit",
            archives=[s.archive_uri for s in batch],
        )
        if self.review:
            self.pending.park(plan, [ItemDecision(item=i) for i in range(len(plan.items))])
            result.pending_plan = str(plan.metadata["plan_id"])
            return result
        options = ApplyOptions(
            kind="session_commit", purpose="session commit", archive_uri=batch[0].archive_uri
        )
        applied = await self.updater.apply(plan, None, options)
        result.history_id = applied.history_id
        result.written = len(applied.written_uris)
        result.errors += [f"{e.target}: {e.message}" for e in applied.item_errors] + list(applied.errors)
        return result

    def plan(self, memories: list[ExtractedMemory]) -> PolicyUpdatePlan:
        """One item per target file, the memories aimed at it merged (read under no lock: the
        updater's compare-and-swap refuses an item whose file changed since)."""
        groups: dict[MemoryKey, list[ExtractedMemory]] = {}
        for memory in memories:
            groups.setdefault(_key(memory), []).append(memory)
        items, errors = [], []
        for group in groups.values():
            try:
                item = self._item(group)
            except OvtuiError as exc:  # a name, space or file that cannot take it: reported, not written
                first = group[0]
                whose = f" of peer {first.peer_id}" if first.peer_id else ""
                errors.append(f"{first.memory_type} {first.name or first.memory_type}{whose}: {exc}")
                continue
            if item is not None:
                items.append(item)
        return PolicyUpdatePlan(items=items, metadata={"errors": errors} if errors else {})

    def _item(self, group: list[ExtractedMemory]) -> PolicyPlanItem | None:
        first = group[0]
        schema = self.store.registry.get(first.memory_type)
        extra: dict[str, Any] = {}
        for memory in group:
            extra.update(
                {k: v for k, v in memory.fields.items() if k not in RESERVED and k != schema.name_field}
            )
        probe = PolicyPlanItem(
            kind="upsert",
            memory_type=first.memory_type,
            target_name=first.name or first.memory_type,
            after_content="",
            metadata={"fields": extra},
            peer_id=first.peer_id,
        )
        current = self.store.read_uri(plan_target(self.store, probe).uri)
        if current is not None and schema.operation_mode == "add_only":
            return None  # written once; the case a later commit repeats is already there
        have = _lines(current.content) if current is not None else []
        new = [ln for m in group for ln in _lines(str(m.fields.get("content", ""))) if ln not in have]
        new = list(dict.fromkeys(new))
        if not new:
            return None  # nothing the file does not already say: a no-op is not written
        after = (
            "\n".join([*have, *new]) if schema.operation_mode != "add_only" else str(first.fields["content"])
        )
        return probe.model_copy(
            update={
                "after_content": after,
                "before_content": current.content if current is not None else None,
                "base_version": current.version if current is not None else None,
                "confidence": 1.0,
                "metadata": {"fields": extra, "rationale": f"stated in a session ({len(group)} mention(s))"},
            }
        )
