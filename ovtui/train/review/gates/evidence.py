"""The evidence gate: for each item of a plan, the batch's trajectories that support it, and the
passing ones of the same intent that the change might break (its counter-evidence)."""

from __future__ import annotations

from ovtui.core.domain import PolicyUpdatePlan, RolloutAnalysis
from ovtui.train.review.gates.base import GateReport, PlanToCheck


def mark_evidence(plan: PolicyUpdatePlan, analyses: list[RolloutAnalysis]) -> None:
    """Per item: the batch's trajectories that support it, and the passing ones of the same intent
    (by the item's evidence) that the change might break."""
    by_uri: dict[str, RolloutAnalysis] = {}
    for analysis in analyses:
        for trajectory in analysis.trajectories:
            by_uri[trajectory.uri] = analysis
    for item in plan.items:
        supporting = [u for u in item.evidence_trajectory_uris if u in by_uri]
        intents = {by_uri[u].rollout.case.task_signature for u in supporting}
        counter = sorted(
            t.uri
            for a in analyses
            if a.evaluation.passed and a.rollout.case.task_signature in intents
            for t in a.trajectories
            if t.uri not in supporting
        )
        item.metadata["evidence"] = supporting
        item.metadata["counter_evidence"] = counter


class EvidenceGate:
    topic = "evidence"

    async def check(self, planned: PlanToCheck) -> GateReport:
        mark_evidence(planned.plan, planned.analyses)
        return GateReport()
