"""Pruning checked before anyone is asked: the deletions ``ovtui utility`` would propose, measured
one at a time, are run together before the plan is offered.

Two copies of one useful file are each "no measurable effect" alone (the other still serves), yet
deleting both loses what either gave. So the candidates (harmful first, then those with no
effect) are added one by one to a set removed together, and the policy without that set runs the
cases of all of them: a candidate whose joint removal would lower accuracy on those cases is
kept, and named with the candidates it is redundant with (a group: keep one of them). The plan
says so in every item: measured one at a time, checked together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ovtui.core.domain import ExperienceSet, Model, PolicyPlanItem, PolicyUpdatePlan
from ovtui.train.inference import paired
from ovtui.train.review.plans import proposal_metadata
from ovtui.train.utility import PLAN_SOURCE, ExperienceUtility, UtilityPlan, case_runs, without

if TYPE_CHECKING:
    from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline

STAGE_TOGETHER = "utility_together"  # the policy without the deletions so far, on their cases
CHECKED = "measured one at a time, checked together"


class Redundant(Model):
    """A candidate kept: removing it together with ``group`` lowers accuracy on their cases."""

    name: str
    group: list[str]  # the deletions it was removed with
    delta: float  # accuracy on those cases without them all, minus with the policy

    def line(self) -> str:
        others = ", ".join(self.group) or "nothing else"
        return (
            f"{self.name}: kept — redundant with {others}: removing them together moves accuracy "
            f"{self.delta:+.1%} on their cases (keep one of the group)"
        )


@dataclass
class PruneCheck:
    """The deletions that passed the joint check, the redundant ones kept, and the joint result."""

    deleted: list[ExperienceUtility] = field(default_factory=list)
    kept: list[Redundant] = field(default_factory=list)
    cases: int = 0  # the cases the final set was checked on
    delta: float = 0.0  # accuracy on them without the deleted set, minus with the policy
    calls: int = 0

    def line(self) -> str:
        names = ", ".join(e.name for e in self.deleted)
        return (
            f"{CHECKED}: the policy without {names} on their {self.cases} case(s) moves accuracy "
            f"{self.delta:+.1%} (never lower, or it is not offered)"
        )


def candidates(
    entries: Iterable[ExperienceUtility], policy: ExperienceSet, proposed: set[str]
) -> list[ExperienceUtility]:
    """The harmful and no-effect experiences still as measured (same version), not already
    ``proposed`` (by URI): harmful first, then the least useful."""
    current = {e.uri: e for e in policy.policies}
    chosen = [
        e
        for e in entries
        if e.verdict in ("harmful", "none")
        and e.uri in current
        and current[e.uri].version == e.version
        and e.uri not in proposed
    ]
    return sorted(chosen, key=lambda e: (e.verdict != "harmful", e.delta, e.name))


async def check_together(
    plan: UtilityPlan,
    pipeline: OfflinePolicyOptimizationPipeline,
    batch: int,
    with_it: Mapping[str, list[int]],
    chosen: list[ExperienceUtility],
) -> PruneCheck:
    """Add each candidate to the set removed together when the policy without the set does not do
    worse on the set's cases than the policy (observed: no net loss, and no verdict of worse)."""
    check = PruneCheck()
    by_uri = {e.uri: e for e in plan.policy.policies}
    cases = {c.name: c for c in plan.cases}
    for candidate in chosen:
        trying = [*check.deleted, candidate]
        names = sorted({c for e in trying for c in e.cases if c in cases})
        less = without(plan.policy, *(by_uri[e.uri] for e in trying))
        loader = case_runs([cases[c] for c in names], plan.trials, batch)
        results = (await pipeline.eval(loader, less, stage=STAGE_TOGETHER)).report.results
        check.calls += sum(len(t) for t in results.values())
        joint = paired({c: with_it[c] for c in names if c in with_it}, results)
        if joint.delta >= 0 and joint.inference.direction != "worse":
            check.deleted.append(candidate)
            check.cases, check.delta = joint.cases, joint.delta
        else:
            group = [e.name for e in check.deleted if set(e.cases) & set(candidate.cases)]
            check.kept.append(Redundant(name=candidate.name, group=group, delta=joint.delta))
    return check


def prune_plan(check: PruneCheck, policy: ExperienceSet) -> PolicyUpdatePlan:
    """A delete of each experience that passed the joint check, with its own result, its cost and
    the joint check as the reason."""
    current = {e.uri: e for e in policy.policies}
    items = [
        PolicyPlanItem(
            kind="delete",
            target_name=entry.name,
            target_uri=entry.uri,
            before_content=current[entry.uri].content,
            base_version=entry.version,
            metadata={
                "rationale": f"utility: {entry.line()}; {check.line()}",
                "utility": entry.model_dump(mode="json"),
            },
        )
        for entry in check.deleted
    ]
    metadata = proposal_metadata(PLAN_SOURCE) | {
        "checked_together": {
            "line": check.line(),
            "cases": check.cases,
            "delta": check.delta,
            "kept": [k.model_dump() | {"line": k.line()} for k in check.kept],
        },
    }
    return PolicyUpdatePlan(items=items, metadata=metadata)
