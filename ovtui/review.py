"""The review gate between plan and apply, and the pending plans it parks for a person.

A policy decides per item: ``all`` approves everything, ``none`` rejects everything,
``confidence>=X`` approves items at or above X, ``ask`` parks the plan in ``.ovtui/pending/`` for
the app. Pending plans are files, so they survive a restart. Whether approved by a policy or by a
person, a plan is applied by the same ``apply_reviewed`` path, so files and records are identical.
A parked plan keeps its evidence (the analysed rollouts) so it can be re-planned later against the
policy set as it is then (``ovtui/replan.py``). The app and ``ovtui review`` share all of this.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from filelock import FileLock, Timeout
from pydantic import Field
from watchfiles import awatch

from ovtui.context import ApplyOptions
from ovtui.domain import (
    Experience,
    ExperienceSet,
    Model,
    PolicyApplyResult,
    PolicyPlanItem,
    PolicyUpdatePlan,
    RolloutAnalysis,
)
from ovtui.errors import OvtuiError
from ovtui.interfaces import PolicyUpdater
from ovtui.memory.memory_diff import ReviewDecision
from ovtui.memory.types import EXPERIENCES
from ovtui.plan_assessment import validation_line
from ovtui.workspace.fsio import atomic_write_text, remove_durably
from ovtui.workspace.locks import DEFAULT_TIMEOUT_S
from ovtui.workspace.paths import validate_name
from ovtui.workspace.store import MemoryStore
from ovtui.workspace.targets import plan_target

Decision = Literal["pending", "approved", "rejected"]

LOCKS_FOLDER = ".locks"
_LOCK_POLL_S = 0.001
# A waiting run hears of a settled plan within a watcher step; it re-reads the file at least this
# often anyway (a lost file event costs a second, never a hang).
_WATCH_DEBOUNCE_MS = 20
_WATCH_STEP_MS = 10
_WATCH_RECHECK_MS = 1000


class ItemDecision(Model):
    item: int
    decision: Decision = "pending"
    note: str = ""


class ReviewPolicy:
    def __init__(self, spec: str) -> None:
        self.spec = spec.strip()
        self.threshold: float | None = None
        if self.spec.startswith("confidence>="):
            try:
                self.threshold = float(self.spec.split(">=", 1)[1])
            except ValueError:
                raise OvtuiError(f"review policy {spec!r}: the threshold is not a number") from None
        elif self.spec not in {"all", "none", "ask", "gate"}:
            raise OvtuiError(f"unknown review policy {spec!r}: use all, none, ask, gate or confidence>=X")

    @property
    def asks(self) -> bool:
        return self.spec == "ask"

    def decide(self, item: PolicyPlanItem) -> Decision:
        if self.spec == "all":
            return "approved"
        if self.spec == "none":
            return "rejected"
        if self.threshold is not None:
            return "approved" if (item.confidence or 0.0) >= self.threshold else "rejected"
        return "pending"

    def decisions(self, plan: PolicyUpdatePlan) -> list[ItemDecision]:
        """Per item; an item carrying case-specific values is never approved automatically, and the
        gate approves only when validation accuracy does not drop (else the person decides)."""
        result: list[ItemDecision] = []
        for index, item in enumerate(plan.items):
            if self.spec == "gate":
                decision, note = self._gate(plan)
            else:
                decision = self.decide(item)
                note = "" if decision == "pending" else f"auto: {self.spec}"
            if decision == "approved" and item.metadata.get("leaks"):
                decision, note = (
                    "pending",
                    "held: carries case-specific values " + ", ".join(item.metadata["leaks"]),
                )
            result.append(ItemDecision(item=index, decision=decision, note=note))
        return result

    @staticmethod
    def _gate(plan: PolicyUpdatePlan) -> tuple[Decision, str]:
        measured = plan.metadata.get("validation")
        if not measured:
            return "pending", "held: no validation cases to check the plan against"
        line = validation_line(measured)
        if measured["after"] < measured["before"]:
            return "pending", f"held: {line}"
        return "approved", f"auto: gate ({line})"


class PendingPlan(Model):
    plan_id: str
    plan: PolicyUpdatePlan
    decisions: list[ItemDecision]
    stale: list[int] = Field(default_factory=list)
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    run_id: str | None = None
    status: Literal["pending", "applied", "discarded", "replanned"] = "pending"
    history_id: str | None = None
    # The analysed rollouts the plan was made from: what a re-plan estimates again.
    evidence: list[RolloutAnalysis] = Field(default_factory=list)
    replaced_by: str | None = None  # the plan a re-plan made in its place

    @property
    def undecided(self) -> int:
        return sum(d.decision == "pending" for d in self.decisions)

    def summary(self) -> dict[str, Any]:
        """One row of ``ovtui review list --json`` (and what the app's queue shows)."""
        counts = {k: sum(d.decision == k for d in self.decisions) for k in ("approved", "rejected")}
        return {
            "plan_id": self.plan_id,
            "items": len(self.plan.items),
            "undecided": self.undecided,
            **counts,
            "stale": len(self.stale),
            "created_at": self.created_at,
            "run_id": self.run_id,
            "replannable": bool(self.evidence),
        }


def evidence_for(plan: PolicyUpdatePlan, analyses: list[RolloutAnalysis] | None) -> list[RolloutAnalysis]:
    """The analyses whose trajectories a plan's items cite (what a re-plan needs)."""
    cited = {uri for item in plan.items for uri in item.evidence_trajectory_uris}
    return [a for a in analyses or [] if any(t.uri in cited for t in a.trajectories)]


def stale_subplan(plan: PolicyUpdatePlan, stale: list[int]) -> PolicyUpdatePlan:
    """The stale items of ``plan`` as a plan of their own (``<plan_id>-stale``)."""
    plan_id = plan.metadata.get("plan_id")
    metadata = {**plan.metadata, "plan_id": f"{plan_id}-stale", "stale_of": plan_id}
    return PolicyUpdatePlan(items=[plan.items[i] for i in stale], metadata=metadata)


def describe_apply(plan_id: str, result: PolicyApplyResult, *, approved: int | None = None) -> str:
    """What applying a plan did, in words, for the CLI and the app alike: how much was written, how
    many items were refused and why, and, when nothing changed, that nothing was applied."""
    written, deleted = len(result.written_uris), len(result.deleted_uris)
    stale = len(result.stale_items)
    invalid = [e for e in result.item_errors if not e.stale]
    refused = []
    if stale:
        refused.append(f"{stale} stale (the experience changed after planning)")
    refused += [f"{e.target}: {e.message}" for e in invalid]
    why = "; ".join(refused)
    if result.dry_run:
        head = f"Dry run of plan {plan_id}: would write {written} and delete {deleted} file(s)"
        head += "; nothing changed"
    elif written or deleted:
        head = f"Applied plan {plan_id}: wrote {written} and deleted {deleted} file(s)"
        linked = len(result.metadata.get("linked_uris") or [])
        if linked:
            # Backlinks mirrored onto the files an item cites are in the same record: say so.
            head += f", and updated the links of {linked} other file(s)"
    elif stale and not invalid:
        return f"Plan {plan_id}: nothing applied: {stale} item(s) stale; re-plan it or discard it"
    elif approved == 0:
        return f"Plan {plan_id}: nothing applied: no item was approved"
    else:
        head = f"Plan {plan_id}: nothing applied"
    record = f"history/{result.history_id}" if result.history_id else "none"
    text = f"{head}. Record: {record}."
    if refused:
        text += f" {stale + len(invalid)} item(s) refused: {why}."
    return text


def approved_subplan(
    plan: PolicyUpdatePlan, decisions: list[ItemDecision]
) -> tuple[PolicyUpdatePlan, list[int]]:
    """The approved items (in order) and their indices in the original plan."""
    chosen = [d.item for d in decisions if d.decision == "approved"]
    return PolicyUpdatePlan(items=[plan.items[i] for i in chosen], metadata=dict(plan.metadata)), chosen


async def apply_reviewed(
    updater: PolicyUpdater, plan: PolicyUpdatePlan, decisions: list[ItemDecision], policy_set: ExperienceSet
) -> tuple[PolicyApplyResult, list[int]]:
    """Apply the approved part of a plan; the record carries every decision, rejected ones too."""
    subplan, chosen = approved_subplan(plan, decisions)
    plan_id = plan.metadata.get("plan_id")
    options = ApplyOptions(
        decisions=[ReviewDecision(item=d.item, decision=d.decision, note=d.note) for d in decisions],
        plan_id=None if plan_id is None else str(plan_id),
        item_indices=chosen,
    )
    result = await updater.apply(subplan, policy_set, options)
    return result, chosen


class PendingPlans:
    """``.ovtui/pending/<plan_id>.json``, a store that several processes write.

    One writer discipline: every change is a read-modify-write of one plan file under that plan's
    OS file lock (``.ovtui/pending/.locks/<plan_id>.lock``), so a person's decision in the app and a
    stale-marking or settling in a worker process never overwrite each other. A run waiting for a
    decision watches the plan file, so a plan settled by any process wakes it.
    """

    def __init__(self, store: MemoryStore, *, lock_timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.store = store
        self.folder = store.paths.state / "pending"
        self.lock_timeout = lock_timeout
        self._settled: dict[str, asyncio.Event] = {}

    def _path(self, plan_id: str) -> Path:
        return self.folder / f"{validate_name(plan_id, what='plan id')}.json"

    @contextmanager
    def _locked(self, plan_id: str) -> Iterator[None]:
        folder = self.folder / LOCKS_FOLDER
        folder.mkdir(parents=True, exist_ok=True)
        name = validate_name(plan_id, what="plan id")
        lock = FileLock(str(folder / f"{name}.lock"), thread_local=False, is_singleton=False)
        try:
            lock.acquire(timeout=self.lock_timeout, poll_interval=_LOCK_POLL_S)
        except Timeout:
            raise OvtuiError(
                f"pending plan {plan_id!r} stayed locked for {self.lock_timeout:.0f}s by another writer"
            ) from None
        try:
            yield
        finally:
            lock.release()

    def _update(self, plan_id: str, change: Callable[[PendingPlan], bool | None]) -> PendingPlan:
        """Read, change and save one plan under its lock (``change`` returning False skips the save)."""
        with self._locked(plan_id):
            pending = self.get(plan_id)
            if change(pending) is not False:
                self._write(pending)
        return pending

    def park(
        self,
        plan: PolicyUpdatePlan,
        decisions: list[ItemDecision],
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

    def _write(self, pending: PendingPlan) -> None:
        atomic_write_text(
            self._path(pending.plan_id), pending.model_dump_json(indent=2), root=self.store.paths.root
        )

    def resolve(self, ref: str) -> str:
        """A waiting plan's id from its id or a unique part of it (as ``history show`` accepts)."""
        ids = [p.plan_id for p in self.list()]
        if ref in ids:
            return ref
        matches = [i for i in ids if ref and ref in i]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise OvtuiError(f"no pending plan matches {ref!r} (`ovtui review list` shows them)")
        raise OvtuiError(f"{ref!r} matches {len(matches)} pending plans: {', '.join(matches[:5])}")

    def get(self, plan_id: str) -> PendingPlan:
        path = self._path(plan_id)
        if not path.exists():
            raise OvtuiError(f"no pending plan {plan_id!r}")
        return PendingPlan.model_validate_json(path.read_text(encoding="utf-8"))

    def list(self) -> list[PendingPlan]:
        """Pending plans, oldest first; a corrupt file is skipped (it stays on disk for inspection)."""
        if not self.folder.is_dir():
            return []
        plans: list[PendingPlan] = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                plan = PendingPlan.model_validate_json(path.read_text(encoding="utf-8"))
            except (ValueError, OSError):
                continue
            if plan.status == "pending":
                plans.append(plan)
        return sorted(plans, key=lambda p: p.created_at)

    def is_waiting(self, plan_id: str) -> bool:
        try:
            return self.get(plan_id).status == "pending"
        except (OvtuiError, ValueError, OSError):
            return False

    def decide(self, plan_id: str, item: int, decision: Decision, note: str = "") -> PendingPlan:
        def change(pending: PendingPlan) -> None:
            _still_open(pending)
            if not 0 <= item < len(pending.decisions):
                raise OvtuiError(f"plan {plan_id} has no item {item}")
            pending.decisions[item] = ItemDecision(item=item, decision=decision, note=note)

        return self._update(plan_id, change)

    def decide_items(
        self, plan_id: str, items: builtins.list[int] | None, decision: Decision, note: str = ""
    ) -> PendingPlan:
        """Decide the given items, or (``None``) every item still undecided."""

        def change(pending: PendingPlan) -> None:
            _still_open(pending)
            undecided = [d.item for d in pending.decisions if d.decision == "pending"]
            for item in undecided if items is None else items:
                if not 0 <= item < len(pending.decisions):
                    last = len(pending.decisions) - 1
                    raise OvtuiError(f"plan {plan_id} has no item {item} (its items are 0–{last})")
                kept = pending.decisions[item].note  # a note written before deciding is not lost
                pending.decisions[item] = ItemDecision(item=item, decision=decision, note=note or kept)

        return self._update(plan_id, change)

    def mark_stale(self, plan_id: str, items: builtins.list[int]) -> PendingPlan:
        """Add ``items`` to a plan's stale marks (an apply refused them as stale)."""

        def change(pending: PendingPlan) -> None:
            pending.stale = sorted(set(pending.stale) | set(items))

        return self._update(plan_id, change)

    def decide_all(self, plan_id: str, decision: Decision, note: str = "") -> PendingPlan:
        """Decide every undecided item; a decision the reviewer already made, and its note, stay."""
        return self.decide_items(plan_id, None, decision, note)

    def edit_after(self, plan_id: str, item: int, after_content: str) -> PendingPlan:
        def change(pending: PendingPlan) -> None:
            _still_open(pending)
            target = pending.plan.items[item]
            if target.kind != "upsert":
                raise OvtuiError("only an upsert's after-content can be edited")
            target.after_content = after_content.strip()
            target.metadata["edited_by_reviewer"] = True

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
        status: Literal["applied", "discarded", "replanned"],
        history_id: str | None,
        replaced_by: str | None = None,
    ) -> None:
        """Close a plan; an applied plan keeps the decisions it was applied with."""

        def close(current: PendingPlan) -> None:
            current.status = status
            current.history_id = history_id
            current.replaced_by = replaced_by
            if status == "applied":
                current.decisions = pending.decisions

        settled = self._update(pending.plan_id, close)
        pending.status, pending.history_id = settled.status, settled.history_id
        pending.replaced_by = settled.replaced_by
        self._event(pending.plan_id).set()

    def remove(self, plan_id: str) -> None:
        remove_durably(self._path(plan_id), root=self.store.paths.root)

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
        self.folder.mkdir(parents=True, exist_ok=True)
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


def _still_open(pending: PendingPlan) -> None:
    if pending.status != "pending":
        raise OvtuiError(f"plan {pending.plan_id} is already {pending.status}")
