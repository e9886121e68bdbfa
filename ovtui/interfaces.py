"""The Protocols of seed 000 §6. Components implement them; the engine and pipeline use only these."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol, runtime_checkable

from ovtui.context import ExecutionContext
from ovtui.domain import (
    Case,
    ExperienceSet,
    PatchSemanticGradient,
    PolicyApplyResult,
    PolicyUpdatePlan,
    Rollout,
    RolloutAnalysis,
    RolloutTrainingResult,
    RubricEvaluation,
)


@runtime_checkable
class CaseLoader(Protocol):
    def batches(self, context: Any) -> AsyncIterator[list[Case]]: ...


@runtime_checkable
class RolloutExecutor(Protocol):
    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]: ...


@runtime_checkable
class RolloutEvaluator(Protocol):
    async def evaluate(self, rollout: Rollout, context: Any) -> RubricEvaluation: ...


@runtime_checkable
class RolloutAnalyzer(Protocol):
    async def analyze(self, rollout: Rollout, context: Any) -> RolloutAnalysis: ...


@runtime_checkable
class GradientEstimator(Protocol):
    async def estimate(
        self, analysis: RolloutAnalysis, experience_set: ExperienceSet, context: Any
    ) -> list[PatchSemanticGradient]: ...


@runtime_checkable
class PolicyOptimizer(Protocol):
    async def plan(
        self, gradients: list[PatchSemanticGradient], policy_set: ExperienceSet, context: Any
    ) -> PolicyUpdatePlan: ...


@runtime_checkable
class PolicyUpdater(Protocol):
    async def apply(
        self, plan: PolicyUpdatePlan, policy_set: ExperienceSet, context: Any
    ) -> PolicyApplyResult: ...


@runtime_checkable
class PolicyTrainer(Protocol):
    async def train_rollouts(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        context: Any,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> RolloutTrainingResult: ...


@runtime_checkable
class PolicySnapshotter(Protocol):
    async def snapshot(self, policy_set: ExperienceSet, context: Any = None) -> str: ...
