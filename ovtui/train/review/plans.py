"""A plan under review: the decision on each item, a plan parked for a person, and the approved
part of a plan applied.

The engine, the review policy, the pending plans and the gates share these; they import nothing of
the review's rules, so a gate can name a ``PendingPlan`` without importing the policy that reads its
findings (``ovtui.train.review.policy``). Whether approved by a policy or by a person, a plan is
applied by the same ``apply_reviewed`` path, so files and records are identical.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field, model_validator

from ovtui.core.context import ApplyOptions
from ovtui.core.decisions import Approval, ReviewDecision
from ovtui.core.domain import (
    ExperienceSet,
    Model,
    PolicyApplyResult,
    PolicyPlanItem,
    PolicyUpdatePlan,
    RolloutAnalysis,
)
from ovtui.core.interfaces import PolicyUpdater
from ovtui.core.reviewers import item_digest
from ovtui.memory.hunks import with_hunks
from ovtui.train.review.approvals import tally

Decision = Literal["pending", "approved", "rejected"]
SettledStatus = Literal["applied", "discarded", "replanned"]


class ItemDecision(Model):
    item: int
    decision: Decision = "pending"
    note: str = ""
    reviewer: str = ""  # who made this decision (``policy:<spec>`` for a review policy)
    # Each person's approval so far, the hunks it covers with it (``ovtui.train.review.approvals``):
    # an item a hunk of which needs two people stays pending until two have approved that hunk.
    approvals: list[Approval] = Field(default_factory=list)
    # The content hunks to apply (numbered from 1, ``ovtui.memory.hunks``); None: the whole item.
    hunks: list[int] | None = None

    @model_validator(mode="before")
    @classmethod
    def _named_approvals(cls, data: Any) -> Any:
        """A plan written before approvals named their hunks lists names: each approved what the
        item took then."""
        if isinstance(data, dict) and any(isinstance(a, str) for a in data.get("approvals") or []):
            hunks = data.get("hunks")
            approvals = [
                {"reviewer": a, "hunks": hunks} if isinstance(a, str) else a for a in data["approvals"]
            ]
            data = {**data, "approvals": approvals}
        return data

    @property
    def approvers(self) -> list[str]:
        """Who approved it so far, in order."""
        return list(dict.fromkeys(a.reviewer for a in self.approvals))

    def by(
        self,
        approval: Approval,
        decision: Decision,
        note: str,
        item: PolicyPlanItem,
        second_approver_for: Collection[str],
    ) -> ItemDecision:
        """This item decided again by ``approval.reviewer``: an approval replaces that person's
        earlier one and the item is approved once every hunk someone approved has as many people's
        approvals as its kind needs (``approvals.tally``); a rejection or an undo starts over."""
        if decision != "approved":
            return ItemDecision(item=self.item, decision=decision, note=note, reviewer=approval.reviewer)
        approvals = [a for a in self.approvals if a.reviewer != approval.reviewer] + [approval]
        return self.counted(approvals, item, second_approver_for).model_copy(
            update={"note": note, "reviewer": approval.reviewer}
        )

    def counted(
        self, approvals: list[Approval], item: PolicyPlanItem, second_approver_for: Collection[str]
    ) -> ItemDecision:
        """This decision with ``approvals`` counted again: approved (with the hunks every approver
        it needs approved) or pending."""
        counts = tally(item, approvals, second_approver_for)
        verdict: Decision = "approved" if counts.approved else "pending"
        return self.model_copy(
            update={"decision": verdict, "approvals": approvals, "hunks": counts.hunks if approvals else None}
        )

    def held(self, note: str) -> ItemDecision:
        """Back to undecided, saying why: approvals given to the text before an edit do not carry
        over to the edited text."""
        return self.model_copy(update={"decision": "pending", "note": note, "approvals": []})


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


def recorded(item: PolicyPlanItem, decision: ItemDecision) -> ReviewDecision:
    """A decision as the record keeps it: per hunk who approved it, and every approval as given."""
    approved = decision.decision == "approved" and decision.approvals
    return ReviewDecision(
        item=decision.item,
        decision=decision.decision,
        note=decision.note,
        reviewer=decision.reviewer,
        approvals=decision.approvers,
        proposed=_proposed(item),
        hunks=decision.hunks,
        approved_by=tally(item, decision.approvals, ()).approved_by() if approved else None,
        signoffs=decision.approvals,
        content_sha256=item_digest(item) if decision.approvals else None,
    )


async def apply_reviewed(
    updater: PolicyUpdater,
    plan: PolicyUpdatePlan,
    decisions: list[ItemDecision],
    policy_set: ExperienceSet,
) -> tuple[PolicyApplyResult, list[int]]:
    """Apply the approved part of a plan; the record carries every decision, rejected ones too."""
    subplan, chosen = approved_subplan(plan, decisions)
    plan_id = plan.metadata.get("plan_id")
    options = ApplyOptions(
        decisions=[recorded(plan.items[d.item], d) for d in decisions],
        plan_id=None if plan_id is None else str(plan_id),
        item_indices=chosen,
    )
    result = await updater.apply(subplan, policy_set, options)
    return result, chosen
