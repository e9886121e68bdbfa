"""A minimal in-memory training loop over the offline backend (no workspace, no shells).

rollout → trajectory draft → proposal per rollout → merged decisions per batch → applied to the
ExperienceSet in memory. It mirrors what the pipeline does, small enough to read in one go.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ovtui.components.memory_store import file_from_experience
from ovtui.components.offline import OfflineGradientProposer, OfflinePlanMerger, OfflineTrajectoryExtractor
from ovtui.components.offline.text import tokenize
from ovtui.context import ExecutionContext
from ovtui.domain import (
    Case,
    Experience,
    ExperienceSet,
    PatchSemanticGradient,
    PolicyStatus,
    Rollout,
    RolloutAnalysis,
    Trajectory,
)
from ovtui.memory.fileformat import MemoryFile
from ovtui.memory.search import LexicalIndex
from ovtui.sample_env import SampleAgentExecutor

ROOT = "viking://user/default/memories/experiences"


@dataclass
class LoopReport:
    batch_accuracy: list[float] = field(default_factory=list)
    decisions: int = 0


def accuracy(rollouts: list[Rollout]) -> float:
    return sum(bool(r.evaluation and r.evaluation.passed) for r in rollouts) / max(len(rollouts), 1)


def evaluate(cases: list[Case], policy_set: ExperienceSet) -> list[Rollout]:
    return SampleAgentExecutor().execute_sync(cases, policy_set, ExecutionContext("eval"))


def _candidates(anchor: str, policy_set: ExperienceSet, limit: int = 5) -> list[Experience]:
    policies = policy_set.policies
    if not policies:
        return []
    scores = LexicalIndex([tokenize(f"{p.name.replace('_', ' ')} {p.content}") for p in policies]).scores(
        tokenize(anchor)
    )
    ranked = sorted(range(len(policies)), key=lambda i: -scores[i])
    return [policies[i] for i in ranked[:limit] if scores[i] > 0]


def _gradients(
    rollouts: list[Rollout], policy_set: ExperienceSet, serial: int
) -> list[PatchSemanticGradient]:
    extractor, proposer = OfflineTrajectoryExtractor(), OfflineGradientProposer()
    by_name = policy_set.by_name()
    gradients = []
    for offset, rollout in enumerate(rollouts):
        assert rollout.evaluation is not None
        draft = extractor.draft(rollout, rollout.evaluation, "\n".join(rollout.evaluation.feedback))
        trajectory = Trajectory(
            name=draft.name,
            uri=f"viking://user/default/memories/trajectories/{draft.name}_{serial + offset:06d}.md",
            content=draft.content,
            outcome=draft.outcome,
            retrieval_anchor=draft.retrieval_anchor,
        )
        analysis = RolloutAnalysis(rollout=rollout, evaluation=rollout.evaluation, trajectories=[trajectory])
        proposal = proposer.proposal(analysis, _candidates(draft.retrieval_anchor, policy_set), trajectory)
        if proposal is None:
            continue
        current = by_name.get(proposal.experience_name)
        gradients.append(
            PatchSemanticGradient(
                before_file=file_from_experience(current) if current else None,
                after_file=MemoryFile(
                    uri=f"{ROOT}/{proposal.experience_name}.md",
                    content=proposal.content,
                    fields={"experience_name": proposal.experience_name},
                ),
                base_version=current.version if current else None,
                rationale=proposal.rationale,
                evidence_trajectory_uris=[trajectory.uri],
                confidence=rollout.evaluation.score,
            )
        )
    return gradients


def apply_decisions(
    policy_set: ExperienceSet, gradients: list[PatchSemanticGradient]
) -> tuple[ExperienceSet, int]:
    decisions = OfflinePlanMerger().decisions(gradients, policy_set, [])
    policies = {p.name: p for p in policy_set.policies}
    for decision in decisions:
        current = policies.get(decision.experience_name)
        if decision.kind == "delete":
            policies.pop(decision.experience_name, None)
        elif current is None:
            policies[decision.experience_name] = Experience(
                name=decision.experience_name,
                uri=f"{ROOT}/{decision.experience_name}.md",
                version=1,
                status=PolicyStatus.DRAFT,
                content=decision.content or "",
            )
        else:
            policies[decision.experience_name] = current.model_copy(
                update={"content": decision.content or "", "version": current.version + 1}
            )
    return ExperienceSet(root_uri=ROOT, policies=sorted(policies.values(), key=lambda p: p.name)), len(
        decisions
    )


def train(
    cases: list[Case], policy_set: ExperienceSet, *, epochs: int = 3, batch_size: int = 8
) -> tuple[ExperienceSet, LoopReport]:
    report = LoopReport()
    executor = SampleAgentExecutor()
    serial = 0
    for epoch in range(epochs):
        for start in range(0, len(cases), batch_size):
            batch = cases[start : start + batch_size]
            rollouts = executor.execute_sync(batch, policy_set, ExecutionContext(f"epoch-{epoch}"))
            report.batch_accuracy.append(accuracy(rollouts))
            gradients = _gradients(rollouts, policy_set, serial)
            serial += len(rollouts)
            policy_set, applied = apply_decisions(policy_set, gradients)
            report.decisions += applied
    return policy_set, report
