"""What an environment is (seed 000 §15.6.4): cases by split, one case executed with a policy set
into a graded Rollout, and grading of a rollout read back from a file."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet, Rollout, RubricEvaluation
from ovtui.core.errors import OvtuiError


class EnvironmentError_(OvtuiError):
    """An unknown environment, split or case, or one whose optional data is not installed."""


@runtime_checkable
class Environment(Protocol):
    name: str
    description: str

    def splits(self) -> list[str]: ...

    def cases(self, split: str) -> list[Case]: ...

    async def execute(self, case: Case, policy_set: ExperienceSet, context: ExecutionContext) -> Rollout:
        """Run one case with the experiences of ``policy_set``; the rollout carries its evaluation
        and ``context.policy_snapshot_id`` unchanged."""
        ...

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation: ...


def check_split(environment: Environment, split: str) -> None:
    if split not in environment.splits():
        known = ", ".join(environment.splits())
        raise EnvironmentError_(f"{environment.name}: no split {split!r} (splits: {known})")
