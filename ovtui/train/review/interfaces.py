"""What the engine knows of the review, as Protocols: the policy that decides a plan's items
(``ovtui.train.review.policy.ReviewPolicy``) and where a plan that waits for a person is parked
(``ovtui.train.review.pending.PendingPlans``). The builder (``ovtui.wiring.composition``) puts the
two together in a ``Review``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ovtui.core.domain import PolicyUpdatePlan, RolloutAnalysis
    from ovtui.train.review.plans import ItemDecision, PendingPlan


class PlanDecider(Protocol):
    @property
    def spec(self) -> str:
        """The policy's words (``ask``, ``confidence>=0.8``), as the run's log names it."""
        ...

    @property
    def asks(self) -> bool:
        """Whether every plan goes to a person, whatever the items' decisions."""
        ...

    def decisions(self, plan: PolicyUpdatePlan) -> list[ItemDecision]: ...

    def following(self, spec: str) -> PlanDecider:
        """The policy ``spec`` names, in this one's place for the rest of a run (a person changed
        it while the run went on)."""
        ...


class PlanParking(Protocol):
    def park(
        self,
        plan: PolicyUpdatePlan,
        decisions: list[ItemDecision],
        run_id: str | None = None,
        stale: list[int] | None = None,
        evidence: list[RolloutAnalysis] | None = None,
    ) -> PendingPlan: ...

    def park_stale(
        self, subplan: PolicyUpdatePlan, run_id: str | None, evidence: list[RolloutAnalysis]
    ) -> PendingPlan: ...

    async def wait_settled(self, plan_id: str) -> PendingPlan: ...


@dataclass(frozen=True)
class Review:
    """How a run's plans are reviewed: the policy that decides their items, where a plan a person
    must decide is parked, and whether the run waits until that person has settled it."""

    policy: PlanDecider
    parking: PlanParking
    wait_for_review: bool = False
