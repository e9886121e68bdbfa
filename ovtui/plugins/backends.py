"""The seams between the component shells and their backends (offline or LLM).

The shells (TrajectoryRolloutAnalyzer, ExperienceGradientEstimator, PatchMergePolicyOptimizer) own
everything that must not depend on who does the thinking: evaluation precedence, writing
trajectories, finding candidate experiences, computing confidence from the real reward, compare-
and-swap bases and provenance. A backend only turns evidence into drafts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import Field

from ovtui.core.domain import (
    Experience,
    ExperienceSet,
    Model,
    PatchSemanticGradient,
    Rollout,
    RolloutAnalysis,
    RubricEvaluation,
    Trajectory,
    TrajectoryOutcome,
)
from ovtui.plugins.session_extraction import SessionExtractor


class TrajectoryDraft(Model):
    """One trajectory a backend extracted from a rollout (the shell names and writes the file)."""

    name: str
    content: str
    outcome: TrajectoryOutcome = TrajectoryOutcome.UNKNOWN
    retrieval_anchor: str = ""


class ExperienceProposal(Model):
    """One proposed experience edit. For an existing experience, ``content`` may be full text or
    SEARCH/REPLACE blocks against its current content; for a new one it is the full text."""

    experience_name: str
    content: str
    status: str | None = None
    rationale: str = ""


# The metadata key under which a plan item carries what its merger reported as contradictions,
# until the contradiction check (train/review/gates/model_contradictions.py) validates them.
REPORTED_CONTRADICTIONS = "reported_contradictions"


class ReportedContradiction(Model):
    """A line an item adds that its merger saw say the opposite of another experience's line (or
    of another line of its own file), both quoted. Only a report: the contradiction check keeps it
    only if both quotes are real lines of the files involved."""

    line: str
    other: str  # the other experience's name (the item's own for a line of its own file)
    other_line: str
    why: str = ""


class MergeDecision(Model):
    """One item of a merged plan. ``source_gradients`` are indices into the batch's gradients;
    their evidence trajectories become this item's provenance. ``contradictions``: what a merger
    that looks for them saw (an empty list: it looked and saw none; None: it does not look, and a
    model configured for the check asks about the item in a call of its own)."""

    kind: Literal["upsert", "delete"] = "upsert"
    experience_name: str
    content: str | None = None
    status: str | None = None
    rationale: str = ""
    source_gradients: list[int] = Field(default_factory=list)
    contradictions: list[ReportedContradiction] | None = None


class TrajectoryExtractor(Protocol):
    label: str

    async def extract(
        self, rollout: Rollout, evaluation: RubricEvaluation, feedback: str
    ) -> list[TrajectoryDraft]: ...


class GradientProposer(Protocol):
    label: str

    async def propose(
        self, trajectory: Trajectory, analysis: RolloutAnalysis, candidates: list[Experience]
    ) -> list[ExperienceProposal]: ...


class PlanMerger(Protocol):
    label: str

    async def merge(
        self, gradients: list[PatchSemanticGradient], policy_set: ExperienceSet, similar: list[Experience]
    ) -> list[MergeDecision]: ...


@dataclass(frozen=True)
class Backends:
    """The seams a backend fills: who does the thinking inside the analyzer, the estimator and the
    optimizer, and who reads a committed session."""

    extractor: TrajectoryExtractor
    proposer: GradientProposer
    merger: PlanMerger
    session_extractor: SessionExtractor

    def replaced(
        self,
        *,
        extractor: TrajectoryExtractor | None = None,
        proposer: GradientProposer | None = None,
        merger: PlanMerger | None = None,
        session_extractor: SessionExtractor | None = None,
    ) -> Backends:
        """These seams with the ones given put in their place: a backend that changes one seam of
        another builds the other's and replaces that one alone."""
        return Backends(
            extractor or self.extractor,
            proposer or self.proposer,
            merger or self.merger,
            session_extractor or self.session_extractor,
        )
