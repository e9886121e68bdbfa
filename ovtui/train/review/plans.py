"""A plan under review: the decision on each item, a plan parked for a person, and the approved
part of a plan applied.

The engine, the review policy, the pending plans and the gates share these; they import nothing of
the review's rules, so a gate can name a ``PendingPlan`` without importing the policy that reads its
findings (``ovtui.train.review.policy``). Whether approved by a policy or by a person, a plan is
applied by the same ``apply_reviewed`` path, so files and records are identical.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from ovtui.core.context import ApplyOptions
from ovtui.core.decisions import ReviewDecision
from ovtui.core.domain import (
    ExperienceSet,
    Model,
    PolicyApplyResult,
    PolicyPlanItem,
    PolicyUpdatePlan,
    RolloutAnalysis,
)
from ovtui.core.interfaces import PolicyUpdater
from ovtui.memory.hunks import with_hunks

Decision = Literal["pending", "approved", "rejected"]
SettledStatus = Literal["applied", "discarded", "replanned"]


class ItemDecision(Model):
    item: int
    decision: Decision = "pending"
    note: str = ""
    reviewer: str = ""  # who made this decision (``policy:<spec>`` for a review policy)
    # Who approved the item so far: an item that needs two reviewers stays pending until two
    # different names are here.
    approvals: list[str] = Field(default_factory=list)
    # The content hunks approved (numbered from 1, ``ovtui.memory.hunks``); None: the whole item.
    hunks: list[int] | None = None

    def by(
        self, reviewer: str, decision: Decision, note: str, needed: int, hunks: list[int] | None = None
    ) -> ItemDecision:
        """This item decided again by ``reviewer``: an approval adds the name to ``approvals`` and
        approves once ``needed`` different reviewers have; a rejection or an undo starts over.
        ``hunks``: the hunks this approval takes (None: as approved before, or the whole item)."""
        if decision != "approved":
            return ItemDecision(item=self.item, decision=decision, note=note, reviewer=reviewer)
        approvals = list(dict.fromkeys([*self.approvals, reviewer]))
        verdict: Decision = "approved" if len(approvals) >= needed else "pending"
        chosen = self.hunks if hunks is None else sorted(set(hunks))
        return ItemDecision(
            item=self.item, decision=verdict, note=note, reviewer=reviewer, approvals=approvals, hunks=chosen
        )

    def held(self, note: str) -> ItemDecision:
        """Back to undecided, saying why: approvals given to the text before an edit do not carry
        over to the edited text."""
        return self.model_copy(update={"decision": "pending", "note": note, "approvals": []})

    def approvals_line(self, needed: int) -> str:
        """``1 of 2 approvals (ana)`` for an item that needs more than one reviewer, else ``""``."""
        if needed < 2:
            return ""
        got = len(self.approvals) if self.decision != "rejected" else 0
        names = f" ({', '.join(self.approvals)})" if got else ""
        return f"{min(got, needed)} of {needed} approvals{names}"


class PendingPlan(Model):
    plan_id: str
    plan: PolicyUpdatePlan
    decisions: list[ItemDecision]
    stale: list[int] = Field(default_factory=list)
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    run_id: str | None = None
    status: Literal["pending"] | SettledStatus = "pending"
    history_id: str | None = None
    # The analysed rollouts the plan was made from: what a re-plan estimates again.
    evidence: list[RolloutAnalysis] = Field(default_factory=list)
    replaced_by: str | None = None  # the plan a re-plan made in its place
    settled_at: str | None = None
    settled_by: str | None = None  # "pid N on HOST": who applied, discarded or re-planned it

    def settled_line(self) -> str:
        """Why a settled plan cannot be applied, decided or re-planned any more, and by whom."""
        verb = {"applied": "applied", "discarded": "discarded", "replanned": "re-planned"}[self.status]
        text = f"plan {self.plan_id} was already {verb}"
        if self.settled_by:
            text += f" by {self.settled_by}"
        if self.settled_at:
            text += f" at {self.settled_at}"
        if self.status == "applied":
            text += f" (record: history/{self.history_id})" if self.history_id else " (nothing was written)"
        elif self.status == "replanned" and self.replaced_by:
            text += f" as plan {self.replaced_by}"
        return text + ": nothing done"

    @property
    def undecided(self) -> int:
        return sum(d.decision == "pending" for d in self.decisions)

    def summary(self) -> dict[str, Any]:
        """One row of ``ovtui review list --json`` (and what the app's queue shows)."""
        counts = {k: sum(d.decision == k for d in self.decisions) for k in ("approved", "rejected")}
        return {
            "plan_id": self.plan_id,
            "items": len(self.plan.items),
            "undecided": self.undecided,
            **counts,
            "stale": len(self.stale),
            "created_at": self.created_at,
            "run_id": self.run_id,
            "replannable": bool(self.evidence),
        }


def proposal_metadata(source: str) -> dict[str, Any]:
    """A plan's metadata when ``source`` (a measurement, not a training run) proposes it."""
    return {
        "plan_id": uuid.uuid4().hex[:12],
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "backend": source,
        "source": source,
    }


def evidence_for(plan: PolicyUpdatePlan, analyses: list[RolloutAnalysis] | None) -> list[RolloutAnalysis]:
    """The analyses whose trajectories a plan's items cite (what a re-plan needs)."""
    cited = {uri for item in plan.items for uri in item.evidence_trajectory_uris}
    return [a for a in analyses or [] if any(t.uri in cited for t in a.trajectories)]


def stale_subplan(plan: PolicyUpdatePlan, stale: list[int]) -> PolicyUpdatePlan:
    """The stale items of ``plan`` as a plan of their own (``<plan_id>-stale``)."""
    plan_id = plan.metadata.get("plan_id")
    metadata = {**plan.metadata, "plan_id": f"{plan_id}-stale", "stale_of": plan_id}
    return PolicyUpdatePlan(items=[plan.items[i] for i in stale], metadata=metadata)


def with_approved_hunks(item: PolicyPlanItem, decision: ItemDecision) -> PolicyPlanItem:
    """The item as approved: with only some hunks approved, its base with exactly those hunks."""
    if decision.hunks is None or item.kind != "upsert":
        return item
    after = with_hunks(item.before_content, item.after_content or "", decision.hunks)
    return item.model_copy(update={"after_content": after})


def approved_subplan(
    plan: PolicyUpdatePlan, decisions: list[ItemDecision]
) -> tuple[PolicyUpdatePlan, list[int]]:
    """The approved items (in order, each as approved: ``with_approved_hunks``) and their indices in
    the original plan."""
    chosen = [d.item for d in decisions if d.decision == "approved"]
    items = [with_approved_hunks(plan.items[i], decisions[i]) for i in chosen]
    return PolicyUpdatePlan(items=items, metadata=dict(plan.metadata)), chosen


def _proposed(item: PolicyPlanItem) -> str | None:
    proposed = item.metadata.get("proposed_content")
    return proposed if isinstance(proposed, str) else None


async def apply_reviewed(
    updater: PolicyUpdater, plan: PolicyUpdatePlan, decisions: list[ItemDecision], policy_set: ExperienceSet
) -> tuple[PolicyApplyResult, list[int]]:
    """Apply the approved part of a plan; the record carries every decision, rejected ones too."""
    subplan, chosen = approved_subplan(plan, decisions)
    plan_id = plan.metadata.get("plan_id")
    options = ApplyOptions(
        decisions=[
            ReviewDecision(
                item=d.item,
                decision=d.decision,
                note=d.note,
                reviewer=d.reviewer,
                approvals=d.approvals,
                proposed=_proposed(plan.items[d.item]),
                hunks=d.hunks,
            )
            for d in decisions
        ],
        plan_id=None if plan_id is None else str(plan_id),
        item_indices=chosen,
    )
    result = await updater.apply(subplan, policy_set, options)
    return result, chosen
