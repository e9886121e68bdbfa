"""An agent's rollouts graded by the environment its cases are for.

An agent runs cases; it need not know how they are graded. A rollout that comes back without an
evaluation is graded here by the environment of the workspace's datasets (``[trainer]
environment``) when it can grade that case, so any agent — ovtui's model agent or one from another
package — is measured by the same rubric as the environment's own agent.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet, Rollout
from ovtui.core.interfaces import RolloutEvaluator, RolloutExecutor


class Grader(RolloutEvaluator, Protocol):
    def can_grade(self, case: Case) -> bool: ...


class GradedRolloutExecutor:
    def __init__(self, agent: RolloutExecutor, grader: Grader) -> None:
        self.agent = agent
        self.grader = grader

    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        rollouts = await self.agent.execute(cases, policy_set, context)
        ungraded = [r for r in rollouts if r.evaluation is None and self.grader.can_grade(r.case)]
        evaluations = await asyncio.gather(*(self.grader.evaluate(r) for r in ungraded))
        for rollout, evaluation in zip(ungraded, evaluations, strict=True):
            rollout.evaluation = evaluation
        return rollouts
