"""What a stage is told besides its inputs, as typed objects.

``RunContext`` is one run (train, eval, stream): its id, where its events go, the flag that
cancels it and what a person steers while it runs. ``ExecutionContext`` is what an executor needs
for one batch of cases. ``ApplyOptions`` is what the updater is told besides the plan: the review
behind it and how to take the lock.
A stage that needs none of these takes none.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from ovtui.core.decisions import ReviewDecision
from ovtui.core.domain import PolicyUpdatePlan
from ovtui.core.errors import RunCancelled
from ovtui.core.events import EventBus


@dataclass(slots=True)
class RunSteering:
    """What a person changes while a run goes on: the review policy of the plans still to come
    (None: the one the run started with). Set on the run's event loop."""

    approve: str | None = None


@dataclass(frozen=True, slots=True)
class RunContext:
    run_id: str | None = None
    events: EventBus = field(default_factory=EventBus)
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    steering: RunSteering = field(default_factory=RunSteering)

    def check_cancelled(self) -> None:
        if self.cancel.is_set():
            raise RunCancelled("run cancelled")


@dataclass(frozen=True, slots=True)
class ExecutionContext:
    """One batch of rollouts: the policy snapshot they run under, and which run, stage and epoch."""

    policy_snapshot_id: str
    run_id: str | None = None
    stage: str = "rollouts"
    epoch: int = -1
    # Set when the run is cancelled: a long execution (a remote one) may stop early.
    cancel: asyncio.Event | None = None

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()


@dataclass(slots=True)
class ApplyOptions:
    """What a caller tells the updater besides the plan: the review and the lock behaviour."""

    decisions: list[ReviewDecision] = field(default_factory=list)
    plan_id: str | None = None
    trace_id: str | None = None
    archive_uri: str | None = None
    kind: str = "apply"
    purpose: str = "apply"
    lock_timeout: float | None = None
    # Position of each plan item in the plan the person reviewed (callers pass only approved items).
    item_indices: list[int] | None = None

    def for_plan(self, plan: PolicyUpdatePlan) -> ApplyOptions:
        """These options with plan_id / trace_id filled from the plan's metadata where unset."""
        meta = plan.metadata
        plan_id = self.plan_id if self.plan_id is not None else meta.get("plan_id")
        trace_id = self.trace_id or meta.get("trace_id") or uuid.uuid4().hex
        return ApplyOptions(
            decisions=list(self.decisions),
            plan_id=None if plan_id is None else str(plan_id),
            trace_id=str(trace_id),
            archive_uri=self.archive_uri,
            kind=self.kind,
            purpose=self.purpose,
            lock_timeout=self.lock_timeout,
            item_indices=self.item_indices,
        )
