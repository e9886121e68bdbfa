"""The gates a plan passes before review, run in the order the builder lists them
(``ovtui.wiring.composition``); the engine knows the runner only as ``PlanGates``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ovtui.train.review.gates.base import Gate, GateReport, PlanToCheck

if TYPE_CHECKING:
    from ovtui.core.domain import ExperienceSet, PolicyUpdatePlan, RolloutAnalysis
    from ovtui.core.events import EventBus


@dataclass(frozen=True)
class GateRunner:
    gates: Sequence[Gate]

    async def assess(
        self,
        plan: PolicyUpdatePlan,
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis],
        events: EventBus,
    ) -> None:
        """Check ``plan`` with each gate in turn and say what each found. A report is said as soon
        as the next gate is on another topic, so it comes before anything that gate logs."""
        planned = PlanToCheck(plan, policy_set, analyses, events)
        held: tuple[str, GateReport] | None = None
        for gate in self.gates:
            if held is not None and held[0] != gate.topic:
                _say(held[1], events)
            held = (gate.topic, await gate.check(planned))
        if held is not None:
            _say(held[1], events)


def _say(report: GateReport, events: EventBus) -> None:
    if report.warning:
        events.log(report.warning, level="warning")
    if report.event is not None:
        events.emit(report.event, **report.data)
