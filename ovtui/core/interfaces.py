"""The kernel's extension points, as Protocols: every stage of a run, and the engine itself.

Components implement the stages; the engine, the pipeline, the trainers and the review use only
these Protocols, never a class. Which class stands behind each in a run is chosen by name in
``ovtui.wiring.registry`` (from ``ovtui.toml``). A stage gets a context object only when it uses
one (``ovtui.core.context``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ovtui.core.context import ApplyOptions, ExecutionContext
from ovtui.core.domain import (
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
from ovtui.core.events import EventBus


@runtime_checkable
class CaseLoader(Protocol):
    """A source of cases (a JSONL split, a remote service): batches in order, and how many in all."""

    def batches(self) -> AsyncIterator[list[Case]]: ...

    async def count(self) -> int: ...


@runtime_checkable
class PolicySetLoader(Protocol):
    """Reads the policy set; with ``previous``, may re-read only what changed since it was read."""

    async def load(self, previous: ExperienceSet | None = None) -> ExperienceSet: ...


@runtime_checkable
class RolloutExecutor(Protocol):
    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]: ...


@runtime_checkable
class RolloutEvaluator(Protocol):
    async def evaluate(self, rollout: Rollout) -> RubricEvaluation: ...


@runtime_checkable
class RolloutAnalyzer(Protocol):
    async def analyze(self, rollout: Rollout) -> RolloutAnalysis: ...


@runtime_checkable
class GradientEstimator(Protocol):
    async def estimate(
        self, analysis: RolloutAnalysis, experience_set: ExperienceSet
    ) -> list[PatchSemanticGradient]: ...


@runtime_checkable
class PolicyOptimizer(Protocol):
    async def plan(
        self, gradients: list[PatchSemanticGradient], policy_set: ExperienceSet
    ) -> PolicyUpdatePlan: ...


@runtime_checkable
class PolicyUpdater(Protocol):
    async def apply(
        self, plan: PolicyUpdatePlan, policy_set: ExperienceSet | None, options: ApplyOptions | None = None
    ) -> PolicyApplyResult: ...


@runtime_checkable
class PolicyTrainer(Protocol):
    """Feeds rollouts to the engine it was built with (for one run)."""

    async def train_rollouts(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> RolloutTrainingResult: ...


@runtime_checkable
class StreamingTrainer(PolicyTrainer, Protocol):
    """A trainer that also takes rollouts one at a time as they arrive (the inbox) until closed."""

    async def submit_rollout(
        self, rollout: Rollout, analysis: RolloutAnalysis | None = None
    ) -> RolloutTrainingResult: ...

    async def close(self) -> None: ...


@runtime_checkable
class PolicySnapshotter(Protocol):
    async def snapshot(self, policy_set: ExperienceSet) -> str: ...


# --- the engine ------------------------------------------------------------------------------------


@dataclass
class EstimateOutcome:
    """The engine's first half for a batch of rollouts: analyses and gradients in rollout order, and
    one error line per rollout that failed (the others went on)."""

    analyses: list[RolloutAnalysis] = field(default_factory=list)
    gradients: list[PatchSemanticGradient] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass
class ApplyOutcome:
    """The engine's second half for one batch: the plan, what applying it did (None while it waits
    for review as plan ``pending_id``), and why a part of it was not applied."""

    plan: PolicyUpdatePlan
    result: PolicyApplyResult | None = None
    pending_id: str | None = None
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class TrainingStages:
    """The engine's four stages, in the order a batch goes through them."""

    analyzer: RolloutAnalyzer
    estimator: GradientEstimator
    optimizer: PolicyOptimizer
    updater: PolicyUpdater


class PlanGates(Protocol):
    """The checks a plan goes through before review (``ovtui.train.review.gates``): they write what
    they find into the plan's and the items' metadata, where Review shows it and the review policy
    reads it, and say on ``events`` what the run's log should show."""

    async def assess(
        self,
        plan: PolicyUpdatePlan,
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis],
        events: EventBus,
    ) -> None: ...


class TrainingEngine(Protocol):
    """What a trainer drives: the engine's two halves, and the run's events."""

    events: EventBus

    async def analyze_and_estimate(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> EstimateOutcome: ...

    async def plan_and_apply(
        self,
        gradients: list[PatchSemanticGradient],
        policy_set: ExperienceSet,
        *,
        analyses: list[RolloutAnalysis] | None = None,
        replan: bool = True,
    ) -> ApplyOutcome: ...


class ReplanningEngine(TrainingEngine, Protocol):
    """What a re-plan drives: the estimate half, and the optimizer alone (a re-plan parks the plan it
    makes for review, so it never goes through the engine's apply)."""

    optimizer: PolicyOptimizer


@runtime_checkable
class ExperienceReader(Protocol):
    """An agent that reads experiences by rules, so it can say which lines it cannot act on: a
    person is told (Review, the Memories screen, ``ovtui check``) rather than silently ignored. An
    agent without one (None where a reader is asked for) reads anything, like an LLM."""

    @property
    def name(self) -> str:
        """How a note names the agent: "the sample agent"."""
        ...

    def unread_lines(self, content: str) -> list[tuple[int, str]]:
        """(line number in ``content``, the line) for each line of an experience it cannot use."""
        ...

    def __hash__(self) -> int: ...  # notes are cached per reader and body


@runtime_checkable
class Embedder(Protocol):
    """Dense vectors of texts (an OpenAI-compatible ``/v1/embeddings`` endpoint, or a local model):
    one vector per text, in order, all of one length. ``space`` names the vector space (endpoint,
    model, size): vectors are cached and compared only within one space."""

    @property
    def space(self) -> str: ...

    async def embed(self, texts: list[str]) -> list[list[float]]: ...

    async def aclose(self) -> None:
        """Close what it holds open in the running event loop (nothing, for a local model)."""
