"""ExperienceGradientEstimator: trajectory → PatchSemanticGradient[].

The shell finds up to five candidate experiences by lexical similarity, lets the backend propose
edits, and turns every proposal into a before/after pair of memory files. Confidence comes from
the real reward of the rollout (never from the mere fact that something was extracted).
"""

from __future__ import annotations

from typing import Any

from ovtui.core.domain import Experience, ExperienceSet, PatchSemanticGradient, RolloutAnalysis, Trajectory
from ovtui.core.errors import OvtuiError
from ovtui.core.experience_files import file_from_experience
from ovtui.core.fileformat import MemoryFile
from ovtui.core.names import validate_name
from ovtui.memory.merge_ops import merge_fields
from ovtui.memory.search import tokenize
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import EXPERIENCES
from ovtui.plugins.backends import ExperienceProposal, GradientProposer
from ovtui.train.components.experience_set_loader import experience_index

MAX_CANDIDATES = 5


def confidence_from(analysis: RolloutAnalysis) -> float:
    """A success is strong evidence for its approach; a failure still teaches, but less surely."""
    if analysis.metadata.get("evaluation_source") == "fallback":
        return 0.2
    score = max(0.0, min(1.0, analysis.evaluation.score))
    return round(0.3 + 0.6 * score if analysis.evaluation.passed else 0.25 + 0.35 * score, 3)


def candidate_experiences(
    trajectory: Trajectory, policy_set: ExperienceSet, limit: int = MAX_CANDIDATES
) -> list[Experience]:
    policies, index = experience_index(policy_set)
    query = tokenize(f"{trajectory.name} {trajectory.retrieval_anchor} {trajectory.content}")
    # One index serves every stage; retired experiences are skipped here rather than indexed apart.
    hits = [policies[i] for i, _ in index.top(query, limit + 8)]
    return [p for p in hits if p.status.serves][:limit]


class ExperienceGradientEstimator:
    def __init__(self, store: MemoryStore, proposer: GradientProposer) -> None:
        self.store = store
        self.proposer = proposer

    async def estimate(
        self, analysis: RolloutAnalysis, experience_set: ExperienceSet
    ) -> list[PatchSemanticGradient]:
        gradients: list[PatchSemanticGradient] = []
        by_name = experience_set.by_name()
        confidence = confidence_from(analysis)
        for trajectory in analysis.trajectories:
            candidates = candidate_experiences(trajectory, experience_set)
            for proposal in await self.proposer.propose(trajectory, analysis, candidates):
                gradients.append(self._gradient(proposal, by_name, trajectory, confidence))
        return gradients

    def _gradient(
        self,
        proposal: ExperienceProposal,
        by_name: dict[str, Experience],
        trajectory: Trajectory,
        confidence: float,
    ) -> PatchSemanticGradient:
        name = validate_name(proposal.experience_name, what="experience name")
        schema = self.store.registry.get(EXPERIENCES)
        current = by_name.get(name)
        before = file_from_experience(current) if current else None
        base_fields: dict[str, Any] = {"content": before.content, **before.fields} if before else {}
        proposed: dict[str, Any] = {"experience_name": name, "content": proposal.content}
        if proposal.status:
            proposed["status"] = proposal.status
        try:
            merged = merge_fields(schema, base_fields, proposed)
        except OvtuiError as exc:
            raise OvtuiError(f"proposal for experience {name!r}: {exc}") from exc
        content = str(merged.pop("content", ""))
        merged.setdefault("memory_type", EXPERIENCES)
        after = MemoryFile(
            uri=current.uri if current else self.store.uri_for_name(EXPERIENCES, name),
            content=content,
            fields=merged,
        )
        return PatchSemanticGradient(
            before_file=before,
            after_file=after,
            base_version=current.version if current else None,
            rationale=proposal.rationale,
            evidence_trajectory_uris=[trajectory.uri],
            confidence=confidence,
            metadata={"backend": self.proposer.label, "case_name": trajectory.metadata.get("case_name")},
        )
