"""The pending plans: ``.ovtui/pending/<plan_id>.json``, a store that several processes write.

One writer discipline: every change is a read-modify-write of one plan file under that plan's OS
file lock (``.ovtui/pending/.locks/<plan_id>.lock``), so a person's decision in the app and a
stale-marking or settling in a worker process never overwrite each other. Applying or re-planning
a plan *claims* it: its lock is held from the re-read that checks it still waits until it is
settled, so two processes can never both apply it; the second is told who settled it.

A settled plan (applied, discarded, re-planned) leaves the folder for ``.ovtui/pending/settled/``
with every decision, note and edit the person made: the folder holds only what still waits, and
nothing anyone decided is lost (a discarded plan has no history record). The settled state is
written into the plan file first and the file is then moved, so at every moment the plan is in one
state; a settled file a crash left behind (still readable, never listed as waiting) is moved by the
first settle of a later store. A run waiting for a decision watches the plan file, so a plan settled
by any process wakes it.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import socket
import time
from collections.abc import AsyncIterator, Callable, Collection, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock, Timeout
from watchfiles import awatch

from ovtui.core.bounds import MAX_RECORD_BYTES
from ovtui.core.decisions import Approval
from ovtui.core.domain import Experience, ExperienceSet, PolicyPlanItem, PolicyUpdatePlan, RolloutAnalysis
from ovtui.core.errors import OvtuiError
from ovtui.core.names import validate_name
from ovtui.core.reviewers import item_digest, reviewer_name
from ovtui.memory.history import HistoryStore
from ovtui.memory.hunks import with_hunks
from ovtui.memory.store import MemoryStore
from ovtui.memory.targets import plan_target
from ovtui.memory.types import EXPERIENCES
from ovtui.storage import fsio
from ovtui.storage.locks import DEFAULT_TIMEOUT_S
from ovtui.storage.paths import PENDING_FOLDER, SETTLED_FOLDER
from ovtui.storage.reading import read_model
from ovtui.train.review.gates.contradictions import Stands, choose, held_contradicting_edit
from ovtui.train.review.gates.sanitizer import held_edit, mask_plan_secrets, masked_lines
from ovtui.train.review.plans import Decision, ItemDecision, PendingPlan, SettledStatus

LOCKS_FOLDER = ".locks"
# A plan lock is held for one small file write: a waiter first retries at once (1 ms) and then less
# and less often, so a long wait (another process applying) does not keep a core busy.
_LOCK_POLL_S = 0.001
_LOCK_POLL_MAX_S = 0.05
# A waiting run hears of a settled plan within a watcher step; it re-reads the file at least this
# often anyway (a lost file event costs a second, never a hang).
_WATCH_DEBOUNCE_MS = 20
_WATCH_STEP_MS = 10
_WATCH_RECHECK_MS = 1000
_SETTLER = f"pid {os.getpid()} on {socket.gethostname()}"


def read_plan(path: Path) -> PendingPlan:
    """The plan in ``path``, read within its size and nesting bounds (pydantic's ValidationError
    for a file that is not one, an OvtuiError for one over the size bound)."""
    return read_model(path, PendingPlan, MAX_RECORD_BYTES, what="the plan", shown=path.name)


class PlanSettledError(OvtuiError):
    """The plan was applied, discarded or re-planned already (the message says by whom)."""


def still_open(pending: PendingPlan) -> None:
    if pending.status != "pending":
        raise PlanSettledError(pending.settled_line())


@dataclass
class Claim:
    """Waiting plans read under their locks, which stay held until the claim ends: what the holder
    writes to them (stale marks, settling) cannot race another apply, decision or settle."""

    store: PendingPlans
    plans: list[PendingPlan]

    def mark_stale(self, pending: PendingPlan, items: builtins.list[int]) -> None:
        self.store._change(pending.plan_id, _add_stale(items))

    def settle(
        self,
        pending: PendingPlan,
        status: SettledStatus,
        history_id: str | None,
        replaced_by: str | None = None,
    ) -> None:
        self.store._settle_held(pending, status, history_id, replaced_by)

    def settle_if_recorded(self, pending: PendingPlan) -> None:
        """A plan whose apply left its History record but whose process died before settling it
        is applied, not waiting: settle it with that record and say so (applying it again would
        only find every item stale)."""
        entries = HistoryStore(self.store.store.paths).entries().values()
        record = next((e for e in entries if e.plan_id == pending.plan_id and not e.dry_run), None)
        if record is None:
            return
        self.settle(pending, "applied", record.id)
        raise PlanSettledError(
            f"plan {pending.plan_id} was already applied (record: history/{record.id}); the process "
            "that applied it stopped before marking it applied, which is now done: nothing else done"
        )


# Makes one approval of an item (plan id, item index, the item, the hunks it covers): signed or not.
Signoff = Callable[[str, int, PolicyPlanItem, "builtins.list[int] | None"], Approval]


def unsigned(reviewer: str) -> Signoff:
    """Approvals by ``reviewer`` that carry no signature (a workspace without ``[review] signers``)."""

    def make(plan_id: str, index: int, item: PolicyPlanItem, hunks: builtins.list[int] | None) -> Approval:
        at = datetime.now(UTC).isoformat(timespec="seconds")
        return Approval(reviewer=reviewer, hunks=hunks, at=at, digest=item_digest(item))

    return make


def _check_hunks(plan_id: str, index: int, item: PolicyPlanItem, chosen: builtins.list[int]) -> None:
    if item.kind != "upsert":
        raise OvtuiError(f"plan {plan_id} item {index} is a {item.kind}: it has no hunks to choose")
    try:
        with_hunks(item.before_content, item.after_content or "", chosen)
    except ValueError as exc:
        raise OvtuiError(f"plan {plan_id} item {index}: {exc}") from None


def _no_masked_secret(
    plan_id: str, index: int, item: PolicyPlanItem, hunks: builtins.list[int] | None
) -> None:
    """Refuse to approve text that still holds a masked secret (what apply writes must be what the
    reviewer read, and the secret itself was never kept)."""
    after = item.after_content or ""
    approved = (
        after if hunks is None or item.kind != "upsert" else with_hunks(item.before_content, after, hunks)
    )
    lines = masked_lines(approved) if item.kind == "upsert" else []
    if lines:
        raise OvtuiError(
            f"plan {plan_id} item {index}: line {lines[0]} holds a secret the pending plan does not keep: "
            "edit the line to say what to write (e in Review), or reject the item"
        )


def _add_stale(items: builtins.list[int]) -> Callable[[PendingPlan], None]:
    def change(pending: PendingPlan) -> None:
        still_open(pending)
        pending.stale = sorted(set(pending.stale) | set(items))

    return change


class PendingPlans:
    """The store (see the module docstring)."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        lock_timeout: float = DEFAULT_TIMEOUT_S,
        second_approver_for: Collection[str] = (),
    ) -> None:
        self.store = store
        self.second_approver_for = frozenset(second_approver_for)  # change kinds two reviewers approve
        self.unreadable: builtins.list[Path] = []  # the plan files the last listing could not read
        self.root = store.paths.root
        self.folder = self.root / PENDING_FOLDER
        self.settled_folder = self.root / SETTLED_FOLDER
        self.lock_timeout = lock_timeout
        self._settled: dict[str, asyncio.Event] = {}
        self._swept = False

    def _path(self, plan_id: str) -> Path:
        return self.folder / f"{validate_name(plan_id, what='plan id')}.json"

    def _settled_path(self, plan_id: str) -> Path:
        return self.settled_folder / f"{validate_name(plan_id, what='plan id')}.json"

    # --- locks --------------------------------------------------------------------------------
    def _lock(self, plan_id: str) -> FileLock:
        folder = self.folder / LOCKS_FOLDER
        fsio.make_dirs(folder, root=self.root)
        name = validate_name(plan_id, what="plan id")
        return FileLock(str(folder / f"{name}.lock"), thread_local=False, is_singleton=False)

    def _acquire(self, plan_id: str, lock: FileLock, timeout: float | None = None) -> None:
        wait = self.lock_timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        poll = _LOCK_POLL_S
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            try:
                lock.acquire(timeout=min(remaining, poll * 10), poll_interval=poll)
                return
            except Timeout:
                if time.monotonic() >= deadline:
                    raise OvtuiError(
                        f"pending plan {plan_id!r} stayed locked for {wait:.0f}s by another writer"
                    ) from None
                poll = min(poll * 2, _LOCK_POLL_MAX_S)

    @contextmanager
    def _locked(self, plan_id: str) -> Iterator[None]:
        lock = self._lock(plan_id)
        self._acquire(plan_id, lock)
        try:
            yield
        finally:
            lock.release()

    def _acquire_all(self, plan_ids: builtins.list[str]) -> builtins.list[FileLock]:
        taken: builtins.list[FileLock] = []
        try:
            for plan_id in plan_ids:
                lock = self._lock(plan_id)
                self._acquire(plan_id, lock)
                taken.append(lock)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise
        return taken

    @asynccontextmanager
    async def claimed(self, plan_ids: Sequence[str]) -> AsyncIterator[Claim]:
        """Hold the locks of waiting plans (taken in name order, so two claimers never deadlock)
        and re-read them under the locks; a plan settled meanwhile raises ``PlanSettledError``."""
        ordered = sorted(dict.fromkeys(plan_ids))
        taking = asyncio.ensure_future(asyncio.to_thread(self._acquire_all, ordered))
        try:
            locks = await asyncio.shield(taking)
        except asyncio.CancelledError:
            # The thread may still take the locks after we stop waiting: give them straight back.
            taking.add_done_callback(_release_if_taken)
            raise
        try:
            plans = [self.get(plan_id) for plan_id in dict.fromkeys(plan_ids)]
            for pending in plans:
                still_open(pending)
            yield Claim(self, plans)
        finally:
            for lock in reversed(locks):
                lock.release()

    # --- reading and writing one plan ----------------------------------------------------------
    def _change(self, plan_id: str, change: Callable[[PendingPlan], bool | None]) -> PendingPlan:
        """Read, change and save one plan; the caller holds its lock (``change`` returning False
        skips the save). A plan the change settled then leaves the folder."""
        pending = self.get(plan_id)
        if change(pending) is not False:
            self._write(pending)
            if pending.status != "pending":
                self._archive(pending.plan_id)
        return pending

    def _update(self, plan_id: str, change: Callable[[PendingPlan], bool | None]) -> PendingPlan:
        with self._locked(plan_id):
            return self._change(plan_id, change)

    def _write(self, pending: PendingPlan) -> None:
        mask_plan_secrets(pending.plan)  # a pending plan file never holds a secret (gates.sanitizer)
        fsio.atomic_write_text(self._path(pending.plan_id), pending.model_dump_json(indent=2), root=self.root)

    def _archive(self, plan_id: str) -> None:
        """Move a settled plan's file (already written as settled) to the settled folder; the
        caller holds its lock. A plan id settled before keeps its earlier file: this one is
        numbered."""
        source = self._path(plan_id)
        target = self._settled_path(plan_id)
        number = 1
        while True:
            try:
                fsio.move_file(source, target, root=self.root, durable=True)
                return
            except FileExistsError:
                if target.read_bytes() == source.read_bytes():  # a crash came between link and unlink
                    fsio.remove_durably(source, root=self.root)
                    return
                number += 1
                target = self.settled_folder / f"{source.stem}.{number}.json"

    def _sweep_settled(self) -> None:
        """Move settled plans a crash left in the folder, once per store object (a crash leaves
        them before a process starts, so the first settle finds them); a plan whose lock is busy
        is left for a later sweep (its holder may be settling it right now)."""
        if self._swept:
            return
        self._swept = True
        for path in sorted(self.folder.glob("*.json")):
            with suppress(ValueError, OSError, OvtuiError):
                if read_plan(path).status == "pending":
                    continue
                lock = self._lock(path.stem)
                self._acquire(path.stem, lock, timeout=0)
                try:
                    if path.exists() and self.get(path.stem).status != "pending":
                        self._archive(path.stem)
                finally:
                    lock.release()

    def get(self, plan_id: str) -> PendingPlan:
        """A plan, waiting or settled (settled plans are read from the settled folder)."""
        for path in (self._path(plan_id), self._settled_path(plan_id)):
            try:
                return read_plan(path)
            except FileNotFoundError:
                continue  # settled and moved a moment ago: the settled folder has it
        raise OvtuiError(f"no pending plan {plan_id!r}")

    # --- the store's operations ------------------------------------------------------------------
    def park(
        self,
        plan: PolicyUpdatePlan,
        decisions: builtins.list[ItemDecision],
        run_id: str | None = None,
        stale: builtins.list[int] | None = None,
        evidence: builtins.list[RolloutAnalysis] | None = None,
    ) -> PendingPlan:
        plan_id = str(plan.metadata.get("plan_id") or "")
        pending = PendingPlan(
            plan_id=plan_id,
            plan=plan,
            decisions=decisions,
            run_id=run_id,
            stale=list(stale or []),
            evidence=evidence or [],
        )
        self.save(pending)
        return pending

    def park_stale(
        self, subplan: PolicyUpdatePlan, run_id: str | None, evidence: builtins.list[RolloutAnalysis]
    ) -> PendingPlan:
        """Park the stale items of a plan (``stale_subplan``): every item undecided and marked stale,
        so the review re-plans or decides them."""
        every = range(len(subplan.items))
        return self.park(subplan, [ItemDecision(item=i) for i in every], run_id, list(every), evidence)

    def save(self, pending: PendingPlan) -> None:
        """Write a whole plan (a new one, or one that this caller alone owns) under its lock."""
        with self._locked(pending.plan_id):
            self._write(pending)

    def resolve(self, ref: str) -> str:
        """A waiting plan's id from its id or a unique part of it (as ``history show`` accepts);
        a plan settled already is named with who settled it."""
        ids = [p.plan_id for p in self.list()]
        if ref in ids:
            return ref
        matches = [i for i in ids if ref and ref in i]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            try:
                found = self.get(ref)
            except (OvtuiError, ValueError, FileNotFoundError):
                # Any other OSError (a plan the disk refuses to read) is said as it is, naming the file.
                raise OvtuiError(
                    f"no pending plan matches {ref!r} (`ovtui review list` shows them{self._absent(ref)})"
                ) from None
            still_open(found)  # settled: say by whom
            return found.plan_id  # parked after the listing above
        raise OvtuiError(f"{ref!r} matches {len(matches)} pending plans: {', '.join(matches[:5])}")

    def _absent(self, ref: str) -> str:
        """``; FILE does not exist`` naming the file a plan id ``ref`` would be read from ("" for a
        ``ref`` that is not an id at all)."""
        try:
            path = self._path(ref)
        except OvtuiError:
            return ""
        return f"; {self.store.paths.relative(path)} does not exist"

    def list(self) -> builtins.list[PendingPlan]:
        """Waiting plans, oldest first; a corrupt file is skipped (it stays on disk for inspection)
        and named in ``unreadable`` until the next listing."""
        self.unreadable = []
        if not self.folder.is_dir():
            return []
        plans: builtins.list[PendingPlan] = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                plan = read_plan(path)
            except (ValueError, OSError, OvtuiError):
                self.unreadable.append(path)
                continue
            if plan.status == "pending":
                plans.append(plan)
        return sorted(plans, key=lambda p: p.created_at)

    def is_waiting(self, plan_id: str) -> bool:
        try:
            return self.get(plan_id).status == "pending"
        except (OvtuiError, ValueError, OSError):
            return False

    def decide(
        self,
        plan_id: str,
        item: int,
        decision: Decision,
        note: str = "",
        *,
        reviewer: str = "",
        signoff: Signoff | None = None,
    ) -> PendingPlan:
        """Decide one item with this note (an empty note clears the one it had)."""
        change = self._deciding([item], decision, note, reviewer, keep_note=False, signoff=signoff)
        return self._update(plan_id, change)

    def decide_items(
        self,
        plan_id: str,
        items: builtins.list[int] | None,
        decision: Decision,
        note: str = "",
        *,
        reviewer: str = "",
        hunks: builtins.list[int] | None = None,
        signoff: Signoff | None = None,
    ) -> PendingPlan:
        """Decide the given items, or (``None``) every item still undecided, as ``reviewer``. An
        approval of a hunk that needs two reviewers (``second_approver_for``) counts as one of
        them: the item stays pending until a different reviewer approves that hunk too. ``hunks``:
        approve only these hunks of each item's content (``ovtui.memory.hunks``, numbered from 1).
        ``signoff`` makes each approval (signed, for a workspace with ``[review] signers``); by
        default an unsigned one by ``reviewer``."""
        change = self._deciding(items, decision, note, reviewer, keep_note=True, hunks=hunks, signoff=signoff)
        return self._update(plan_id, change)

    def _deciding(
        self,
        items: builtins.list[int] | None,
        decision: Decision,
        note: str,
        reviewer: str,
        *,
        keep_note: bool,
        hunks: builtins.list[int] | None = None,
        signoff: Signoff | None = None,
    ) -> Callable[[PendingPlan], None]:
        if hunks is not None and decision != "approved":
            raise OvtuiError("hunks are chosen by approving them: reject the item to reject all of it")
        reviewer = reviewer_name(reviewer) if reviewer else reviewer
        hunks = None if hunks is None else sorted(set(hunks))
        make = signoff or unsigned(reviewer)

        def change(pending: PendingPlan) -> None:
            still_open(pending)
            undecided = [d.item for d in pending.decisions if d.decision == "pending"]
            for item in undecided if items is None else items:
                if not 0 <= item < len(pending.decisions):
                    last = len(pending.decisions) - 1
                    raise OvtuiError(f"plan {pending.plan_id} has no item {item} (its items are 0–{last})")
                earlier = pending.decisions[item]
                planned = pending.plan.items[item]
                if hunks is not None:
                    _check_hunks(pending.plan_id, item, planned, hunks)
                if decision == "approved":
                    _no_masked_secret(pending.plan_id, item, planned, hunks)
                    approval = make(pending.plan_id, item, planned, hunks)
                else:
                    approval = Approval(reviewer=reviewer)
                # a note written before deciding is not lost
                kept = (note or earlier.note) if keep_note else note
                pending.decisions[item] = earlier.by(
                    approval, decision, kept, planned, self.second_approver_for
                )

        return change

    def mark_stale(self, plan_id: str, items: builtins.list[int]) -> PendingPlan:
        """Add ``items`` to a plan's stale marks (an apply refused them as stale)."""
        return self._update(plan_id, _add_stale(items))

    def decide_all(
        self, plan_id: str, decision: Decision, note: str = "", *, reviewer: str = ""
    ) -> PendingPlan:
        """Decide every undecided item; a decision the reviewer already made, and its note, stay."""
        return self.decide_items(plan_id, None, decision, note, reviewer=reviewer)

    def edit_after(
        self,
        plan_id: str,
        item: int,
        after_content: str,
        *,
        reviewer: str = "",
        policy_set: ExperienceSet | None = None,
    ) -> PendingPlan:
        """A reviewer's own text for an upsert. What the learner proposed is kept beside it
        (``proposed_content``, from the first edit): the difference is the reviewer's correction.
        The edit is checked like a proposal: the sanitizer, and (given the experiences as they are,
        ``policy_set``) the contradiction gate."""

        def change(pending: PendingPlan) -> None:
            still_open(pending)
            target = pending.plan.items[item]
            if target.kind != "upsert":
                raise OvtuiError("only an upsert's after-content can be edited")
            target.metadata.setdefault("proposed_content", target.after_content or "")
            changed = after_content.strip() != (target.after_content or "")
            target.after_content = after_content.strip()
            if changed and pending.decisions[item].approvals:
                # an approval (a signed one names its digest) was for the text before the edit
                note = "edited: the approvals were for the text before the edit; approve it again"
                pending.decisions[item] = pending.decisions[item].held(note)
            target.metadata["edited_by_reviewer"] = True
            if reviewer:
                target.metadata["edited_by"] = reviewer
            held_edit(pending, item)
            if policy_set is not None:
                held_contradicting_edit(pending, item, policy_set)

        return self._update(plan_id, change)

    def choose_standing(self, plan_id: str, item: int, contradiction: int, stands: Stands) -> PendingPlan:
        """A reviewer's choice of which line of a contradiction stands (``gates.contradictions``)."""

        def change(pending: PendingPlan) -> None:
            still_open(pending)
            if not 0 <= item < len(pending.plan.items):
                raise OvtuiError(f"plan {plan_id} has no item {item}")
            choose(pending.plan.items[item], contradiction, stands)
            held_edit(pending, item)

        return self._update(plan_id, change)

    def _is_stale(self, item: PolicyPlanItem, current: dict[str, Experience]) -> bool:
        """Experiences are compared with the snapshot; other types read their file (rare, small)."""
        if item.memory_type == EXPERIENCES:
            existing = current.get(item.target_name)
            if existing is None:
                return bool(item.base_conflict(None, None, exists=False))
            return bool(item.base_conflict(existing.content, existing.version, exists=True))
        try:
            memory = self.store.read_uri(plan_target(self.store, item).uri)
        except OvtuiError:
            return False  # the updater reports what is wrong with the target when it is applied
        if memory is None:
            return bool(item.base_conflict(None, None, exists=False))
        return bool(item.base_conflict(memory.content, memory.version, exists=True))

    def refresh_stale(self, policy_set: ExperienceSet) -> builtins.list[str]:
        """Mark items whose target changed since planning; returns the ids of plans that changed.

        Only the ``stale`` list is written, re-read under the plan's lock, so a decision made
        meanwhile (in this process or another) is kept.
        """
        current = policy_set.by_name()
        changed: builtins.list[str] = []

        def mark(pending: PendingPlan) -> bool:
            stale = [i for i, it in enumerate(pending.plan.items) if self._is_stale(it, current)]
            if pending.status != "pending" or stale == pending.stale:
                return False
            pending.stale = stale
            changed.append(pending.plan_id)
            return True

        for listed in self.list():
            with suppress(OvtuiError):  # settled and removed meanwhile: nothing to mark
                self._update(listed.plan_id, mark)
        return changed

    def settle(
        self,
        pending: PendingPlan,
        status: SettledStatus,
        history_id: str | None,
        replaced_by: str | None = None,
    ) -> None:
        """Close a waiting plan (a settled one raises ``PlanSettledError``); an applied plan keeps
        the decisions it was applied with. Its file moves to the settled folder."""
        with self._locked(pending.plan_id):
            self._settle_held(pending, status, history_id, replaced_by)

    def _settle_held(
        self, pending: PendingPlan, status: SettledStatus, history_id: str | None, replaced_by: str | None
    ) -> None:
        def close(current: PendingPlan) -> None:
            still_open(current)
            current.status = status
            current.history_id = history_id
            current.replaced_by = replaced_by
            current.settled_at = datetime.now(UTC).isoformat(timespec="seconds")
            current.settled_by = _SETTLER
            if status == "applied":
                current.decisions = pending.decisions

        settled = self._change(pending.plan_id, close)
        pending.status, pending.history_id = settled.status, settled.history_id
        pending.replaced_by, pending.settled_at, pending.settled_by = (
            settled.replaced_by,
            settled.settled_at,
            settled.settled_by,
        )
        self._sweep_settled()
        self._event(pending.plan_id).set()

    def remove(self, plan_id: str) -> None:
        fsio.remove_durably(self._path(plan_id), root=self.root)

    async def wait_settled(self, plan_id: str) -> PendingPlan:
        """Wait until the plan is settled, by this process (its event) or any other (its file)."""
        event = self._event(plan_id)
        stop = asyncio.Event()
        watcher = asyncio.ensure_future(self._watch_until_settled(plan_id, stop))
        waiter = asyncio.ensure_future(event.wait())
        try:
            await asyncio.wait({watcher, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.set()
            waiter.cancel()
            with suppress(asyncio.CancelledError):
                await watcher
        if not watcher.cancelled():
            watcher.result()  # a plan file that vanished or broke is reported, not waited on forever
        return self.get(plan_id)

    async def _watch_until_settled(self, plan_id: str, stop: asyncio.Event) -> None:
        path = self._path(plan_id)
        fsio.make_dirs(self.folder, root=self.root)
        if not self._still_waiting(plan_id):
            return
        # The watch starts after that first look: the periodic wake-up (yield_on_timeout) closes the
        # gap, and covers a file system whose events are lost.
        async for _ in awatch(
            self.folder,
            watch_filter=lambda _change, changed: Path(changed).name == path.name,
            debounce=_WATCH_DEBOUNCE_MS,
            step=_WATCH_STEP_MS,
            rust_timeout=_WATCH_RECHECK_MS,
            yield_on_timeout=True,
            stop_event=stop,
            recursive=False,
        ):
            if not self._still_waiting(plan_id):
                return

    def _still_waiting(self, plan_id: str) -> bool:
        """True while the plan waits; an unreadable or missing plan file is an error, not a settle."""
        return self.get(plan_id).status == "pending"

    def _event(self, plan_id: str) -> asyncio.Event:
        return self._settled.setdefault(plan_id, asyncio.Event())


def _release_if_taken(taking: asyncio.Future[builtins.list[FileLock]]) -> None:
    if not taking.cancelled() and taking.exception() is None:
        for lock in reversed(taking.result()):
            lock.release()
