"""User memories of session commits (profile, preferences, entities, events, cases): the updater.

StreamingMemoryUpdater: the memories from concurrent commits are queued and written in batches — when
``max_operations`` are waiting, when the oldest has waited ``max_wait_seconds``, on close, and at
once when no other commit is still extracting (a lone commit never waits out a window). A batch is
merged per target file (several sessions adding to ``profile.md`` make one edit) and becomes one plan
of generic memory-type items, so files, compare-and-swap, the journal, History and revert are the
same as for experiences. By default the plan is applied at once (as OpenViking does) and recorded
as a ``session_commit`` record; with ``[sessions] review_user_memories`` it is parked for Review.

Merging (``field_merge``): the memories aimed at one file are applied in order on its current text —
an offline memory appends the lines the file does not hold yet, a model's operation merges each
field by its merge op (SEARCH/REPLACE blocks that no longer match are reported to their commit, not
written); an add-only type (events, cases) is written once and an existing file is left alone. A
peer's memory (routed by ``sessions.peers``) goes to the peer's space, ``peers/<peer_id>/…``: a file
per (type, name, category, peer), so one peer's profile and the user's are different files.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass, field, replace

from ovtui.core.context import ApplyOptions
from ovtui.core.domain import Case, PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.memory.cases import memory_from_case
from ovtui.memory.links import PRODUCED
from ovtui.memory.store import MemoryStore
from ovtui.memory.targets import Target, plan_target
from ovtui.memory.types import CASES
from ovtui.sessions.field_merge import LeftOut, merge_group
from ovtui.train.backends.session_extraction import ExtractedMemory
from ovtui.train.components.policy_updater import MemoryFilePolicyUpdater
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.policy import ItemDecision

RESERVED = frozenset({"content", "memory_type", "version", "links", "backlinks"})


@dataclass
class WriteResult:
    history_id: str | None = None
    pending_plan: str | None = None
    written: int = 0
    errors: list[str] = field(default_factory=list)
    # The files one commit's memories were aimed at, in a batch it may share with other commits: its
    # memory_diff lists only those. A type whose new files are named by their creation time is
    # known by its folder only.
    own_uris: frozenset[str] = frozenset()
    own_folders: frozenset[str] = frozenset()

    def owns(self, uri: str) -> bool:
        return uri in self.own_uris or any(uri.startswith(f"{folder}/") for folder in self.own_folders)


@dataclass
class _Submission:
    memories: list[ExtractedMemory]
    archive_uri: str
    future: asyncio.Future[WriteResult]
    at: float = field(default_factory=time.monotonic)


def case_memory(case: Case, produced: list[str] | None = None) -> ExtractedMemory:
    """The case memory of ``case``, linking to the trajectories its run ``produced``."""
    evidence = case.metadata.get("evidence")
    memory = memory_from_case(case, evidence=evidence if isinstance(evidence, str) else None)
    fields = {k: v for k, v in memory.fields.items() if k not in RESERVED and v is not None}
    return ExtractedMemory(CASES, case.name, {**fields, "content": memory.content}, produced=produced or [])


def case_uri(store: MemoryStore, case: Case) -> str | None:
    """Where the case memory of ``case`` lives (None: a name the type cannot hold)."""
    probe = PolicyPlanItem(kind="upsert", memory_type=CASES, target_name=case.name, after_content="")
    try:
        return plan_target(store, probe).uri
    except OvtuiError:
        return None


MemoryKey = tuple[str, str | None, str, str | None]


def _content(memory: ExtractedMemory) -> str:
    return str(memory.fields.get("content", "")).strip()


def _key(memory: ExtractedMemory) -> MemoryKey:
    """The file a memory goes to: its type, name, category and whose space (a peer's, or None)."""
    return memory.memory_type, memory.name, str(memory.fields.get("category", "")), memory.peer_id


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
                result, left_out, targets = await self._write(batch)
            except Exception as exc:
                for submission in batch:
                    if not submission.future.done():
                        submission.future.set_exception(exc)
                return
            for submission in batch:
                # The batch's record is every commit's; an operation left out is its own commit's error.
                own = [str(x) for x in left_out if any(x.memory is m for m in submission.memories)]
                own = list(dict.fromkeys(own))  # a file that could not take it: once per commit
                aimed = [t for t, group in targets if any(m is s for m in group for s in submission.memories)]
                own_uris = frozenset(t.uri for t in aimed if not t.schema.timestamped)
                folders = frozenset(t.uri.rsplit("/", 1)[0] for t in aimed if t.schema.timestamped)
                if not submission.future.done():
                    submission.future.set_result(
                        replace(result, errors=[*result.errors, *own], own_uris=own_uris, own_folders=folders)
                    )

    # --- one batch --------------------------------------------------------------------------
    async def _write(
        self, batch: list[_Submission]
    ) -> tuple[WriteResult, list[LeftOut], list[tuple[Target, list[ExtractedMemory]]]]:
        """What the batch did, what it left out, and each item's file with the memories merged there."""
        plan, left_out, groups = await asyncio.to_thread(
            self._grouped_plan, [m for s in batch for m in s.memories]
        )
        targets = [
            (plan_target(self.store, item), group) for item, group in zip(plan.items, groups, strict=True)
        ]
        result = WriteResult()
        if not plan.items:
            return result, left_out, targets
        plan.metadata.update(
            plan_id=uuid.uuid4().hex[:12],
            source="session_commit",
            archives=[s.archive_uri for s in batch],
        )
        if self.review:
            decisions = [ItemDecision(item=i) for i in range(len(plan.items))]
            await asyncio.to_thread(self.pending.park, plan, decisions)  # a file lock and a write
            result.pending_plan = str(plan.metadata["plan_id"])
            return result, left_out, targets
        options = ApplyOptions(
            kind="session_commit", purpose="session commit", archive_uri=batch[0].archive_uri
        )
        applied = await self.updater.apply(plan, None, options)
        result.history_id = applied.history_id
        result.written = len(applied.written_uris)
        result.errors = [f"{e.target}: {e.message}" for e in applied.item_errors] + list(applied.errors)
        return result, left_out, targets

    def plan(self, memories: list[ExtractedMemory]) -> tuple[PolicyUpdatePlan, list[LeftOut]]:
        """One item per target file, the memories aimed at it merged (read under no lock: the
        updater's compare-and-swap refuses an item whose file changed since)."""
        plan, left_out, _ = self._grouped_plan(memories)
        return plan, left_out

    def _grouped_plan(
        self, memories: list[ExtractedMemory]
    ) -> tuple[PolicyUpdatePlan, list[LeftOut], list[list[ExtractedMemory]]]:
        """``plan``, with the memories merged into each item (in the items' order)."""
        groups: dict[MemoryKey, list[ExtractedMemory]] = {}
        for memory in memories:
            groups.setdefault(_key(memory), []).append(memory)
        items: list[PolicyPlanItem] = []
        merged: list[list[ExtractedMemory]] = []
        left_out: list[LeftOut] = []
        for group in groups.values():
            try:
                item = self._item(group, left_out)
            except OvtuiError as exc:  # a name, space or file that cannot take it: reported, not written
                left_out += [LeftOut(m, str(exc)) for m in group]
                continue
            if item is not None:
                items.append(item)
                merged.append(group)
        return PolicyUpdatePlan(items=items), left_out, merged

    def _item(self, group: list[ExtractedMemory], left_out: list[LeftOut]) -> PolicyPlanItem | None:
        """The plan item for one file: ``group`` merged in order on its current text (see
        ``field_merge``); operations that no longer apply are added to ``left_out``."""
        first = group[0]
        schema = self.store.registry.get(first.memory_type)
        extra = {
            k: v for m in group for k, v in m.fields.items() if k not in RESERVED and k != schema.name_field
        }
        probe = PolicyPlanItem(
            kind="upsert",
            memory_type=first.memory_type,
            target_name=first.name or first.memory_type,
            after_content="",
            metadata={"fields": extra},
            peer_id=first.peer_id,
        )
        current = self.store.read_uri(plan_target(self.store, probe).uri)
        if schema.operation_mode == "add_only":
            # Written once: the same text again is a no-op; another text under the same name (two
            # events called alike on one day) is not written over, and its commit is told.
            kept = current.content if current is not None else _content(first)
            where = current.uri if current is not None else "in this batch"
            left_out += [
                LeftOut(m, f"an add-only file of that name exists ({where}); not written over")
                for m in group
                if _content(m) != kept.strip()
            ]
            if current is not None:
                return None
            group = [first]
        merged = merge_group(schema, current, group)
        left_out += merged.left_out
        after = merged.content
        fields = {k: v for k, v in merged.fields.items() if k not in RESERVED and k != schema.name_field}
        if after is None or (
            current is not None
            and after == current.content
            and all(current.fields.get(k) == v for k, v in fields.items())
        ):
            return None  # nothing the file does not already say: a no-op is not written
        produced = list(dict.fromkeys(u for m in group for u in m.produced))
        return probe.model_copy(
            update={
                "after_content": after,
                "before_content": current.content if current is not None else None,
                "base_version": current.version if current is not None else None,
                "confidence": 1.0,
                "metadata": {
                    "fields": fields,
                    "rationale": f"stated in a session ({len(group)} mention(s))",
                    **({"link_type": PRODUCED} if produced else {}),
                },
                "evidence_trajectory_uris": produced,
            }
        )
