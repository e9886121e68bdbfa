"""The validation gate: a plan tried on held-out cases before it is applied.

The plan's items are applied to an in-memory overlay of the policy set — never to the workspace —
and the held-out validation cases are run with and without them, for the whole plan and for each
item alone, and the policy as it is again (once, or as many times as ``[trainer] eval_trials``
asks): the A/A null, what the agent moves by itself — a case any rerun moved counts. The
result ("validation 9/12 → 11/12, flips +3 −1", which cases flipped and what the agent did in them,
the null's flips) goes into the plan's and the items' metadata, where Review shows it and the
``gate`` review policy reads it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import (
    Case,
    Experience,
    ExperienceSet,
    PolicyPlanItem,
    PolicyStatus,
    PolicyUpdatePlan,
    Rollout,
)
from ovtui.core.interfaces import RolloutExecutor
from ovtui.core.rollouts import outcome_line
from ovtui.memory.types import EXPERIENCES
from ovtui.train.review.gates.base import GateReport, PlanToCheck


def split_validation(cases: list[Case], fraction: float) -> tuple[list[Case], list[Case]]:
    """(train, validation): a stable share of the cases by a hash of their names, so a case is
    held out in every run alike and never trained on."""
    if fraction <= 0:
        return cases, []

    def held_out(case: Case) -> bool:
        digest = hashlib.sha256(case.name.encode()).digest()
        return int.from_bytes(digest[:4], "big") / 2**32 < fraction

    return [c for c in cases if not held_out(c)], [c for c in cases if held_out(c)]


def overlay(policy_set: ExperienceSet, items: Iterable[PolicyPlanItem]) -> ExperienceSet:
    """The policy set as it would be after ``items`` — in memory only (items of other memory types
    do not change the policy)."""
    policies = {p.name: p for p in policy_set.policies}
    for item in items:
        if item.memory_type != EXPERIENCES:
            continue
        name = item.target_name
        if item.kind == "delete":
            policies.pop(name, None)
            continue
        current = policies.get(name)
        content = item.after_content or ""
        policies[name] = (
            current.model_copy(update={"content": content})
            if current is not None
            else Experience(
                name=name,
                uri=item.target_uri or f"{policy_set.root_uri}/{name}.md",
                version=1,
                status=PolicyStatus.DRAFT,
                content=content,
            )
        )
    return policy_set.model_copy(update={"policies": sorted(policies.values(), key=lambda p: p.name)})


def _passed(rollouts: list[Rollout]) -> dict[str, bool]:
    return {r.case.name: bool(r.evaluation and r.evaluation.passed) for r in rollouts}


def compare(before: list[Rollout], after: list[Rollout]) -> dict[str, Any]:
    was, now = _passed(before), _passed(after)
    traces = {r.case.name: outcome_line(r) for r in after}
    earlier = {r.case.name: outcome_line(r) for r in before}
    gained = sorted(n for n in now if now[n] and not was.get(n, False))
    lost = sorted(n for n in now if was.get(n, False) and not now[n])
    return {
        "before": sum(was.values()),
        "after": sum(now.values()),
        "cases": len(now),
        "gained": gained,
        "lost": lost,
        "flipped": {n: {"before": earlier.get(n, ""), "after": traces[n]} for n in [*gained, *lost]},
    }


def validation_line(result: dict[str, Any]) -> str:
    """``validation 9/12 → 11/12, flips +3 −1``."""
    n = result["cases"]
    return (
        f"validation {result['before']}/{n} → {result['after']}/{n}, "
        f"flips +{len(result['gained'])} −{len(result['lost'])}"
    )


class ValidationGate:
    """Runs a plan on held-out cases in an overlay; the verdict is written into the plan, and
    said as a ``plan_validated`` event."""

    topic = "validation"

    def __init__(self, cases: list[Case], executor: RolloutExecutor, *, reruns: int = 1) -> None:
        self.cases = cases
        self.executor = executor
        self.reruns = max(1, reruns)  # runs of the policy as it is, for the A/A null

    async def check(self, planned: PlanToCheck) -> GateReport:
        result = await self.assess(planned.plan, planned.policy_set)
        if not result:
            return GateReport()
        return GateReport(event="plan_validated", data={"line": validation_line(result), **result})

    async def _run(self, policy_set: ExperienceSet, label: str) -> list[Rollout]:
        return await self.executor.execute(list(self.cases), policy_set, ExecutionContext(label))

    async def assess(self, plan: PolicyUpdatePlan, policy_set: ExperienceSet) -> dict[str, Any]:
        if not self.cases or not plan.items:
            return {}
        before = await self._run(policy_set, "validation-before")
        result = compare(before, await self._run(overlay(policy_set, plan.items), "validation-after"))
        # The A/A null from reruns of the policy as it is: what the agent moves by itself, a case
        # that moved in any of them counted once (each rerun its own stage: a sampling agent draws anew).
        gained: set[str] = set()
        lost: set[str] = set()
        for rerun in range(self.reruns):
            label = "validation-again" if rerun == 0 else f"validation-again-{rerun + 1}"
            again = compare(before, await self._run(policy_set, label))
            gained.update(again["gained"])
            lost.update(again["lost"])
        result["null"] = {"gained": sorted(gained), "lost": sorted(lost - gained), "reruns": self.reruns}
        plan.metadata["validation"] = result
        for index, item in enumerate(plan.items):
            alone = await self._run(overlay(policy_set, [item]), f"validation-item-{index}")
            item.metadata["validation"] = compare(before, alone)
        return result
