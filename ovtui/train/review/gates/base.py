"""What every gate is: a check of a plan that writes its findings into the plan's and the items'
metadata (where Review shows them and the review policy reads them) and returns what the run's log
should say about them. ``ovtui.train.review.gates.runner`` runs a list of them in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ovtui.core.domain import ExperienceSet, PolicyUpdatePlan, RolloutAnalysis
    from ovtui.core.events import EventBus, EventKind


@dataclass(frozen=True)
class PlanToCheck:
    """A plan as the gates see it: the plan, the policy set it was planned against, the analysed
    rollouts of the batch it was learned from, and the run's events (for what a gate says while it
    checks: a model call that failed)."""

    plan: PolicyUpdatePlan
    policy_set: ExperienceSet
    analyses: list[RolloutAnalysis]
    events: EventBus


@dataclass(frozen=True)
class GateReport:
    """What a gate wants said about a plan: a warning line for the run's log, an event (its kind
    and data); empty: nothing to say."""

    warning: str = ""
    event: EventKind | None = None
    data: dict[str, Any] = field(default_factory=dict)


class Gate(Protocol):
    # What the gate reports on. Consecutive gates on one topic are steps of one check (the offline
    # contradiction check, then the model's): the last step's report, which counts what all the
    # steps found, is the one said.
    @property
    def topic(self) -> str: ...

    async def check(self, planned: PlanToCheck) -> GateReport:
        """Mark ``planned.plan``'s metadata with what the gate finds; say what the log should."""
        ...
