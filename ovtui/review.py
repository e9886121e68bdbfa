"""The review gate between plan and apply, and the pending plans it parks for a person.

A policy decides per item: ``all`` approves everything, ``none`` rejects everything,
``confidence>=X`` approves items at or above X, ``ask`` parks the plan in ``.ovtui/pending/`` for
the app. Pending plans are files, so they survive a restart. Whether approved by a policy or by a
person, a plan is applied by the same ``apply_reviewed`` path, so files and records are identical.
"""

from __future__ import annotations

import asyncio
import builtins
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import Field

from ovtui.context import ApplyOptions
from ovtui.domain import Experience, ExperienceSet, Model, PolicyApplyResult, PolicyPlanItem, PolicyUpdatePlan
from ovtui.errors import OvtuiError
from ovtui.interfaces import PolicyUpdater
from ovtui.memory.memory_diff import ReviewDecision
from ovtui.memory.types import EXPERIENCES
from ovtui.workspace.fsio import atomic_write_text, remove_durably
from ovtui.workspace.paths import validate_name
from ovtui.workspace.store import MemoryStore
from ovtui.workspace.targets import plan_target

Decision = Literal["pending", "approved", "rejected"]


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
        elif self.spec not in {"all", "none", "ask"}:
            raise OvtuiError(f"unknown review policy {spec!r}: use all, none, ask or confidence>=X")

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
        decided = [self.decide(item) for item in plan.items]
        return [
            ItemDecision(item=i, decision=d, note="" if d == "pending" else f"auto: {self.spec}")
            for i, d in enumerate(decided)
        ]


class PendingPlan(Model):
    plan_id: str
    plan: PolicyUpdatePlan
    decisions: list[ItemDecision]
    stale: list[int] = Field(default_factory=list)
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    run_id: str | None = None
    status: Literal["pending", "applied", "discarded"] = "pending"
    history_id: str | None = None

    @property
    def undecided(self) -> int:
        return sum(d.decision == "pending" for d in self.decisions)


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
    """``.ovtui/pending/<plan_id>.json``; in-process waiters are woken when a plan is settled."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.folder = store.paths.state / "pending"
        self._settled: dict[str, asyncio.Event] = {}

    def _path(self, plan_id: str) -> Path:
        return self.folder / f"{validate_name(plan_id, what='plan id')}.json"

    def park(
        self, plan: PolicyUpdatePlan, decisions: list[ItemDecision], run_id: str | None = None
    ) -> PendingPlan:
        plan_id = str(plan.metadata.get("plan_id") or "")
        pending = PendingPlan(plan_id=plan_id, plan=plan, decisions=decisions, run_id=run_id)
        self.save(pending)
        return pending

    def save(self, pending: PendingPlan) -> None:
        atomic_write_text(
            self._path(pending.plan_id), pending.model_dump_json(indent=2), root=self.store.paths.root
        )

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
        pending = self.get(plan_id)
        if not 0 <= item < len(pending.decisions):
            raise OvtuiError(f"plan {plan_id} has no item {item}")
        pending.decisions[item] = ItemDecision(item=item, decision=decision, note=note)
        self.save(pending)
        return pending

    def decide_all(self, plan_id: str, decision: Decision, note: str = "") -> PendingPlan:
        pending = self.get(plan_id)
        pending.decisions = [
            ItemDecision(item=d.item, decision=decision, note=note) for d in pending.decisions
        ]
        self.save(pending)
        return pending

    def edit_after(self, plan_id: str, item: int, after_content: str) -> PendingPlan:
        pending = self.get(plan_id)
        target = pending.plan.items[item]
        if target.kind != "upsert":
            raise OvtuiError("only an upsert's after-content can be edited")
        target.after_content = after_content.strip()
        target.metadata["edited_by_reviewer"] = True
        self.save(pending)
        return pending

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
        """Mark items whose target changed since planning; returns the ids of plans that changed."""
        current = policy_set.by_name()
        changed: builtins.list[str] = []
        for pending in self.list():
            stale = [i for i, it in enumerate(pending.plan.items) if self._is_stale(it, current)]
            if stale != pending.stale:
                pending.stale = stale
                self.save(pending)
                changed.append(pending.plan_id)
        return changed

    def settle(
        self, pending: PendingPlan, status: Literal["applied", "discarded"], history_id: str | None
    ) -> None:
        pending.status = status
        pending.history_id = history_id
        self.save(pending)
        self._event(pending.plan_id).set()

    def remove(self, plan_id: str) -> None:
        remove_durably(self._path(plan_id), root=self.store.paths.root)

    async def wait_settled(self, plan_id: str) -> PendingPlan:
        await self._event(plan_id).wait()
        return self.get(plan_id)

    def _event(self, plan_id: str) -> asyncio.Event:
        return self._settled.setdefault(plan_id, asyncio.Event())
