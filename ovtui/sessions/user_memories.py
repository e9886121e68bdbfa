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
peer's memory (routed by ``sessions.peers``) goes to the peer's space, ``peers/<peer_id>/…``: one
file per place its type's declaration gives it, so one peer's profile and the user's are different
files. Files are where OpenViking puts them: a ``fill: owner`` field the memory leaves out is the
space's owner (a preference of the user's own goes to ``preferences/<workspace user>/<topic>.md``, a
peer's to ``peers/<peer>/memories/preferences/<peer>/<topic>.md``), an event is filed under the date
it carries (its first message's), a new file starts from its type's ``init_value``s, and a type whose
body is made from its fields (identity.md, soul.md) gets that body. What is left out is reported to
its commit as an error and as a skipped operation (``WriteResult.skipped``) with its reason code.
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
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.cases import memory_from_case
from ovtui.memory.links import RELATED_TO
from ovtui.memory.memory_diff import ADD_ONLY_EXISTS, NO_WRITABLE_TARGET, SkippedOperation
from ovtui.memory.store import MemoryStore
from ovtui.memory.targets import plan_target
from ovtui.memory.types import CASES, MemoryTypeSchema
from ovtui.plugins.session_extraction import ExtractedMemory
from ovtui.sessions.field_merge import LeftOut, merge_group
from ovtui.train.components.policy_updater import MemoryFilePolicyUpdater
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision

RESERVED = frozenset({"content", "memory_type", "version", "links", "backlinks"})


@dataclass
class WriteResult:
    history_id: str | None = None
    pending_plan: str | None = None
    written: int = 0
    errors: list[str] = field(default_factory=list)
    # The commit's memories that were not written, as its memory_diff lists them.
    skipped: list[SkippedOperation] = field(default_factory=list)
    # The files one commit's memories were aimed at, in a batch it may share with other commits:
    # its memory_diff lists only those.
    own_uris: frozenset[str] = frozenset()

    def owns(self, uri: str) -> bool:
        return uri in self.own_uris


@dataclass
class _Submission:
    memories: list[ExtractedMemory]
    archive_uri: str
    future: asyncio.Future[WriteResult]
    at: float = field(default_factory=time.monotonic)


# A case file always says why it is a case (OpenViking requires ``evidence``): this, when its extractor
# gave no reason of its own.
DEFAULT_EVIDENCE = "A task carried out in a committed session."


def case_memory(case: Case, produced: list[str] | None = None) -> ExtractedMemory:
    """The case memory of ``case``, linking to the trajectories its run ``produced``."""
    evidence = case.metadata.get("evidence")
    given = evidence if isinstance(evidence, str) and evidence.strip() else DEFAULT_EVIDENCE
    memory = memory_from_case(case, evidence=given)
    fields = {k: v for k, v in memory.fields.items() if k not in RESERVED and v is not None}
    return ExtractedMemory(CASES, case.name, {**fields, "content": memory.content}, produced=produced or [])


def case_uri(store: MemoryStore, case: Case) -> str | None:
    """Where the case memory of ``case`` lives (None: a name the type cannot hold)."""
    probe = PolicyPlanItem(kind="upsert", memory_type=CASES, target_name=case.name, after_content="")
    try:
        return plan_target(store, probe).uri
    except OvtuiError:
        return None


def _content(memory: ExtractedMemory) -> str:
    return str(memory.fields.get("content", "")).strip()


def _skipped(store: MemoryStore, left_out: LeftOut) -> SkippedOperation:
    memory = left_out.memory
    try:
        uri: str | None = store.paths.uri_prefix + place(store, memory)
    except OvtuiError:
        uri = None
    return SkippedOperation(
        memory_type=memory.memory_type, uri=uri, reason_code=left_out.code, reason=left_out.reason
    )


def place(store: MemoryStore, memory: ExtractedMemory) -> str:
    """The workspace-relative file a memory goes to, by its type's declaration: its name, the
    fields that name the file (the owner filled in), the time it is filed under, whose space."""
    schema = store.registry.get(memory.memory_type)
    fields = schema.filled(memory.fields, store.owner(memory.peer_id))
    name = memory.name or memory.memory_type
    if schema.timestamped:
        folder = store.type_rel(memory.memory_type, memory.peer_id)
        return f"{folder}/{schema.filename(name, fields=fields, when=memory.when)}"
    return store.rel_for_name(memory.memory_type, name, fields, memory.peer_id)


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
                result, left_out = await self._write(batch)
            except Exception as exc:
                for submission in batch:
                    if not submission.future.done():
                        submission.future.set_exception(exc)
                return
            for submission in batch:
                # The batch's record is every commit's; an operation left out is its own commit's error.
                mine = [x for x in left_out if any(x.memory is m for m in submission.memories)]
                own = list(dict.fromkeys(str(x) for x in mine))  # a file that could not take it: once
                skipped = [_skipped(self.store, x) for x in mine]
                # Its files, and the trajectories its cases link to (the link writes their backlinks).
                aimed = frozenset(
                    uri for m in submission.memories for uri in (self._target_uri(m), *m.produced)
                ) - {""}
                if not submission.future.done():
                    submission.future.set_result(
                        replace(result, errors=[*result.errors, *own], skipped=skipped, own_uris=aimed)
                    )

    def _target_uri(self, memory: ExtractedMemory) -> str:
        """The URI of the file a memory is merged into ("" when it has none: it was left out)."""
        try:
            return self.store.paths.uri_prefix + place(self.store, memory)
        except OvtuiError:
            return ""

    # --- one batch --------------------------------------------------------------------------
    async def _write(self, batch: list[_Submission]) -> tuple[WriteResult, list[LeftOut]]:
        plan, left_out = await asyncio.to_thread(self.plan, [m for s in batch for m in s.memories])
        result = WriteResult()
        if not plan.items:
            return result, left_out
        plan.metadata.update(
            plan_id=uuid.uuid4().hex[:12],
            source="session_commit",
            archives=[s.archive_uri for s in batch],
        )
        if self.review:
            decisions = [ItemDecision(item=i) for i in range(len(plan.items))]
            await asyncio.to_thread(self.pending.park, plan, decisions)  # a file lock and a write
            result.pending_plan = str(plan.metadata["plan_id"])
            return result, left_out
        options = ApplyOptions(
            kind="session_commit", purpose="session commit", archive_uri=batch[0].archive_uri
        )
        applied = await self.updater.apply(plan, None, options)
        result.history_id = applied.history_id
        result.written = len(applied.written_uris)
        result.errors = [f"{e.target}: {e.message}" for e in applied.item_errors] + list(applied.errors)
        return result, left_out

    def plan(self, memories: list[ExtractedMemory]) -> tuple[PolicyUpdatePlan, list[LeftOut]]:
        """One item per target file, the memories aimed at it merged (read under no lock: the
        updater's compare-and-swap refuses an item whose file changed since)."""
        groups: dict[str, list[ExtractedMemory]] = {}
        left_out: list[LeftOut] = []
        for memory in memories:
            try:
                groups.setdefault(place(self.store, memory), []).append(memory)
            except OvtuiError as exc:  # a name or space that cannot take it: reported, not written
                left_out.append(LeftOut(memory, str(exc), NO_WRITABLE_TARGET))
        items: list[PolicyPlanItem] = []
        for rel, group in groups.items():
            try:
                item = self._item(rel, group, left_out)
            except OvtuiError as exc:  # a file that cannot take it: reported, not written
                left_out += [LeftOut(m, str(exc), NO_WRITABLE_TARGET) for m in group]
                continue
            if item is not None:
                items.append(item)
        return PolicyUpdatePlan(items=items), left_out

    def _item(self, rel: str, group: list[ExtractedMemory], left_out: list[LeftOut]) -> PolicyPlanItem | None:
        """The plan item for the file at ``rel``: ``group`` merged in order on its current text (see
        ``field_merge``); operations that no longer apply are added to ``left_out``."""
        first = group[0]
        schema = self.store.registry.get(first.memory_type)
        owner = self.store.owner(first.peer_id)
        extra = {
            k: v
            for m in group
            for k, v in schema.filled(m.fields, owner).items()
            if k not in RESERVED and k != schema.name_field
        }
        probe = PolicyPlanItem(
            kind="upsert",
            memory_type=first.memory_type,
            target_name=first.name or first.memory_type,
            target_uri=self.store.paths.uri_prefix + rel,
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
                LeftOut(
                    m, f"an add-only file of that name exists ({where}); not written over", ADD_ONLY_EXISTS
                )
                for m in group
                if _content(m) != kept.strip()
            ]
            if current is not None:
                return None
            group = [first]
        start = current if current is not None else _initial(schema)
        merged = merge_group(schema, start, group)
        left_out += merged.left_out
        given = schema.filled(merged.fields, owner)  # an immutable field the file has stays as it is
        fields = {k: v for k, v in given.items() if k not in RESERVED and k != schema.name_field}
        if current is None and start is not None:
            fields = {**start.fields, **fields}  # a new file starts from the declared init values
        whole = {**(current.fields if current is not None else {}), **fields}
        made = schema.body(whole)
        after = made if made is not None else merged.content
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
                    **({"link_type": RELATED_TO} if produced else {}),
                },
                "evidence_trajectory_uris": produced,
            }
        )


def _initial(schema: MemoryTypeSchema) -> MemoryFile | None:
    """What a new file of the type starts from: its declared init values (None when it has none)."""
    initial = schema.initial_fields()
    return MemoryFile(content="", fields=initial) if initial else None
