"""Re-planning parked plans against the policy set as it is now.

A plan parked for review was made against the policy set of its moment; once another plan is
applied (three epochs park a dozen plans on one base), its items go stale and could only be thrown
away. A re-plan estimates the plan's evidence (the analysed rollouts it keeps) again against the
current set, merges the gradients into one fresh plan, parks that for review and settles the old
plans as ``replanned``. Several plans re-planned together become ONE plan, so a pile of stale plans
on the same base does not turn into a pile again. ``ovtui review replan`` and the app call this.

What a person decided is not thrown away: a fresh item that would write the same text to the same
target as an item of the old plans keeps that item's decision and note (the reviewer judged exactly
this change). An item whose target or text changed waits for a decision again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ovtui.core.domain import ExperienceSet, PolicyPlanItem, PolicyUpdatePlan, RolloutAnalysis
from ovtui.core.errors import OvtuiError
from ovtui.core.interfaces import ReplanningEngine
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision, PendingPlan


@dataclass
class ReplanResult:
    replaced: list[str]  # the plans settled as re-planned
    plan_id: str | None = None  # the fresh plan waiting for review; None when nothing is left to change
    items: int = 0
    kept: int = 0  # items of the fresh plan that kept a decision made on the old plans
    errors: list[str] = field(default_factory=list)

    def describe(self) -> str:
        old = ", ".join(self.replaced)
        if self.plan_id is None:
            return f"re-planned {old}: against the current experiences nothing is left to change"
        waiting = self.items - self.kept
        kept = f"; {self.kept} kept their decision (same target, same text)" if self.kept else ""
        return f"re-planned {old} as plan {self.plan_id} ({waiting} item(s) waiting for review{kept})"


def stale_plan_ids(pending: PendingPlans, policy_set: ExperienceSet) -> list[str]:
    """Waiting plans with at least one stale item, after marking against ``policy_set``."""
    pending.refresh_stale(policy_set)
    return [p.plan_id for p in pending.list() if p.stale]


def _merged_evidence(plans: list[PendingPlan]) -> list[RolloutAnalysis]:
    seen: set[tuple[str, ...]] = set()
    merged: list[RolloutAnalysis] = []
    for plan in plans:
        for analysis in plan.evidence:
            key = tuple(sorted(t.uri for t in analysis.trajectories))
            if key not in seen:
                seen.add(key)
                merged.append(analysis)
    return merged


def _change_key(item: PolicyPlanItem) -> tuple[str, str | None, str, str, str | None]:
    """What a reviewer's decision is about: which file, and what the item writes there."""
    return item.memory_type, item.peer_id, item.target_name, item.kind, item.after_content


def kept_decisions(plan: PolicyUpdatePlan, old_plans: list[PendingPlan]) -> list[ItemDecision]:
    """The fresh plan's decisions: an item that writes what an old item wrote, to the same target,
    keeps that item's decision and note; when the old plans decided the same change differently,
    it waits for a person again (with their notes)."""
    decided: dict[tuple[str, str | None, str, str, str | None], list[ItemDecision]] = {}
    for old in old_plans:
        for item, decision in zip(old.plan.items, old.decisions, strict=True):
            if decision.decision != "pending" or decision.note or decision.approvals:
                decided.setdefault(_change_key(item), []).append(decision)
    decisions = []
    for index, item in enumerate(plan.items):
        earlier = decided.get(_change_key(item), [])
        verdicts = {d.decision for d in earlier if d.decision != "pending"}
        notes = " / ".join(dict.fromkeys(d.note for d in earlier if d.note))
        verdict = verdicts.pop() if len(verdicts) == 1 else "pending"
        # who decided stays with the decision (a first approval of a two-reviewer item too)
        deciders = [d for d in earlier if d.decision == verdict]
        reviewer = " / ".join(dict.fromkeys(d.reviewer for d in deciders if d.reviewer))
        # one approval a person (their latest); signed ones name the old plan: applying asks again
        approvals = list({a.reviewer: a for d in deciders for a in d.approvals}.values())
        decisions.append(
            ItemDecision(item=index, decision=verdict, note=notes, reviewer=reviewer, approvals=approvals)
        )
    return decisions


async def replan(
    engine: ReplanningEngine, pending: PendingPlans, plan_ids: list[str], policy_set: ExperienceSet
) -> ReplanResult:
    """Re-estimate and re-plan the evidence of ``plan_ids`` against ``policy_set`` as one plan."""
    if not plan_ids:
        raise OvtuiError("no plan to re-plan")
    plans = await asyncio.to_thread(lambda: [pending.get(plan_id) for plan_id in dict.fromkeys(plan_ids)])
    for waiting in plans:
        if waiting.status != "pending":
            raise OvtuiError(f"plan {waiting.plan_id} is {waiting.status}, not waiting for review")
    without = [p.plan_id for p in plans if not p.evidence]
    if without:
        raise OvtuiError(
            f"plan(s) {', '.join(without)} keep no evidence to re-plan from "
            "(parked by an older ovtui): discard them instead"
        )
    evidence = _merged_evidence(plans)
    estimated = await engine.analyze_and_estimate(
        [a.rollout for a in evidence], policy_set, analyses=evidence
    )
    if estimated.errors and not estimated.gradients:
        raise OvtuiError(f"re-planning failed: {estimated.errors[0]}")
    plan = await engine.optimizer.plan(estimated.gradients, policy_set)
    result = ReplanResult(replaced=[p.plan_id for p in plans], errors=list(estimated.errors))
    # Claimed only now (estimating may take long, and a person may still be deciding meanwhile): the
    # old plans are re-read under their locks, so a plan applied or re-planned elsewhere in the
    # meantime is refused before a second fresh plan is parked for it.
    async with pending.claimed(result.replaced) as claim:

        def park_and_settle() -> None:  # file work, off the event loop
            if plan.items:
                plan.metadata["replan_of"] = result.replaced
                # the old plans as they are now, under their locks: a decision made while estimating counts
                decisions = kept_decisions(plan, claim.plans)
                fresh = pending.park(plan, decisions, run_id=None, evidence=evidence)
                result.plan_id, result.items = fresh.plan_id, len(plan.items)
                result.kept = sum(d.decision != "pending" for d in decisions)
            for old in claim.plans:
                claim.settle(old, "replanned", None, replaced_by=result.plan_id)

        await asyncio.to_thread(park_and_settle)
    if result.plan_id is not None:
        engine.events.emit(
            "plan_pending", plan_id=result.plan_id, items=result.items, replan_of=result.replaced
        )
    return result
