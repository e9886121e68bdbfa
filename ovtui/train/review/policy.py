"""The review gate between plan and apply, and the pending plans it parks for a person.

A policy decides per item: ``all`` approves everything, ``none`` rejects everything,
``confidence>=X`` approves items at or above X, ``gate`` approves what validation finds better by
the paired rule (Δ > k·SE, ``ovtui.train.paired``), ``ask`` parks the plan in ``.ovtui/pending/``
for the app (the store is ``ovtui.train.review.pending``; the words are parsed by
``ovtui.core.review_grammar``). Whether approved by a policy or by a person, a plan is applied by
the same ``apply_reviewed`` path, so files and records are identical. A parked plan keeps its
evidence (the analysed rollouts) so it can be re-planned later against the policy set as it is
then (``ovtui.train.review.replan``). The app and
``ovtui review`` share all of this.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import Field

from ovtui.core.config import ChangeKind
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
from ovtui.core.errors import OvtuiError
from ovtui.core.interfaces import PolicyUpdater
from ovtui.core.review_grammar import parse_review_policy
from ovtui.memory.hunks import with_hunks
from ovtui.train.paired import differences_of_flips, direction, standard_error
from ovtui.train.review.gates.contradictions import contradiction_note, unchosen
from ovtui.train.review.gates.sanitizer import held_note, item_hazards
from ovtui.train.review.gates.validation import validation_line

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


def change_kind(item: PolicyPlanItem) -> ChangeKind:
    """What kind of change an item is (``[review] second_approver_for`` names these): a delete, a
    new file, a rewrite (a line of the file as it was is gone) or an update (lines only added)."""
    if item.kind == "delete":
        return "delete"
    if item.before_content is None:
        return "new"
    kept = {line.strip() for line in (item.after_content or "").splitlines()}
    removed = [line for line in item.before_content.splitlines() if line.strip() and line.strip() not in kept]
    return "rewrite" if removed else "update"


def approvals_needed(item: PolicyPlanItem, second_approver_for: Collection[str]) -> int:
    return 2 if change_kind(item) in second_approver_for else 1


def missing_approvals(pending: PendingPlan, second_approver_for: Collection[str]) -> list[str]:
    """The approved-looking items that still lack a second reviewer, one line each (what applying
    refuses): pending ones with one approval, and approved ones the rule now covers."""
    lines = []
    for decision, item in zip(pending.decisions, pending.plan.items, strict=True):
        needed = approvals_needed(item, second_approver_for)
        if needed < 2:
            continue
        short = decision.decision == "approved" and len(set(decision.approvals)) < needed
        if short or (decision.decision == "pending" and decision.approvals):
            lines.append(
                f"item {decision.item} ({change_kind(item)} {item.target_name}) has "
                f"{decision.approvals_line(needed)}: a second reviewer must approve it"
            )
    return lines


class ReviewPolicy:
    """Decides each item of a plan by the policy ``spec`` names (``ovtui.core.review_grammar``).
    An item whose kind is in ``second_approver_for`` is never approved automatically: two people
    must."""

    def __init__(self, spec: str, second_approver_for: Collection[str] = (), *, gate_k: float = 2.0) -> None:
        """``gate_k``: how many standard errors validation must gain by for the gate to approve."""
        self.spec = spec.strip()
        self.second_approver_for = frozenset(second_approver_for)
        self.gate_k = gate_k
        try:
            self.rule = parse_review_policy(spec)
        except ValueError as exc:
            raise OvtuiError(str(exc)) from None

    @property
    def asks(self) -> bool:
        return self.rule.kind == "ask"

    def decide(self, item: PolicyPlanItem) -> Decision:
        if self.rule.kind == "all":
            return "approved"
        if self.rule.kind == "none":
            return "rejected"
        if self.rule.threshold is not None:
            return "approved" if (item.confidence or 0.0) >= self.rule.threshold else "rejected"
        return "pending"

    def decisions(self, plan: PolicyUpdatePlan) -> list[ItemDecision]:
        """Per item; an item carrying case-specific values or a sanitizer finding (hidden characters,
        an injection, tool-call markup, a secret, personal data) is never approved automatically, and the
        gate approves only when validation gains by the paired rule (else the person decides)."""
        result: list[ItemDecision] = []
        for index, item in enumerate(plan.items):
            if self.rule.kind == "gate":
                decision, note = self._gate(plan)
            else:
                decision = self.decide(item)
                note = "" if decision == "pending" else f"auto: {self.spec}"
            if decision == "approved" and item.metadata.get("leaks"):
                decision, note = (
                    "pending",
                    "held: carries case-specific values " + ", ".join(item.metadata["leaks"]),
                )
            if decision == "approved" and (hazards := item_hazards(item)):
                decision, note = "pending", held_note(hazards)
            if decision == "approved" and (conflicts := unchosen(item)):
                decision, note = "pending", f"held: {contradiction_note(conflicts[0])}: choose which stands"
            if decision == "approved" and approvals_needed(item, self.second_approver_for) > 1:
                decision, note = "pending", f"held: a {change_kind(item)} needs two reviewers"
            reviewer = f"policy:{self.spec}" if decision != "pending" else ""
            approvals = [reviewer] if decision == "approved" else []
            result.append(
                ItemDecision(item=index, decision=decision, note=note, reviewer=reviewer, approvals=approvals)
            )
        return result

    def _gate(self, plan: PolicyUpdatePlan) -> tuple[Decision, str]:
        measured = plan.metadata.get("validation")
        if not measured:
            return "pending", "held: no validation cases to check the plan against"
        line = validation_line(measured)
        differences = differences_of_flips(measured["cases"], len(measured["gained"]), len(measured["lost"]))
        delta, se = sum(differences) / max(1, len(differences)), standard_error(differences)
        rule = f"Δ {delta:+.1%}, {self.gate_k:g}·SE {self.gate_k * se:.1%}"
        if direction(delta, se, self.gate_k) != "better":
            return "pending", f"held: {line}: no gain beyond {self.gate_k:g}·SE ({rule})"
        return "approved", f"auto: gate ({line}; {rule})"


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


def evidence_for(plan: PolicyUpdatePlan, analyses: list[RolloutAnalysis] | None) -> list[RolloutAnalysis]:
    """The analyses whose trajectories a plan's items cite (what a re-plan needs)."""
    cited = {uri for item in plan.items for uri in item.evidence_trajectory_uris}
    return [a for a in analyses or [] if any(t.uri in cited for t in a.trajectories)]


def stale_subplan(plan: PolicyUpdatePlan, stale: list[int]) -> PolicyUpdatePlan:
    """The stale items of ``plan`` as a plan of their own (``<plan_id>-stale``)."""
    plan_id = plan.metadata.get("plan_id")
    metadata = {**plan.metadata, "plan_id": f"{plan_id}-stale", "stale_of": plan_id}
    return PolicyUpdatePlan(items=[plan.items[i] for i in stale], metadata=metadata)


def describe_apply(plan_id: str, result: PolicyApplyResult, *, approved: int | None = None) -> str:
    """What applying a plan did, in words, for the CLI and the app alike: how much was written, how
    many items were refused and why, and, when nothing changed, that nothing was applied."""
    written, deleted = len(result.written_uris), len(result.deleted_uris)
    stale = len(result.stale_items)
    invalid = [e for e in result.item_errors if not e.stale]
    refused = []
    if stale:
        refused.append(f"{stale} stale (the experience changed after planning)")
    refused += [f"{e.target}: {e.message}" for e in invalid]
    why = "; ".join(refused)
    if result.dry_run:
        head = f"Dry run of plan {plan_id}: would write {written} and delete {deleted} file(s)"
        head += "; nothing changed"
    elif written or deleted:
        head = f"Applied plan {plan_id}: wrote {written} and deleted {deleted} file(s)"
        linked = len(result.metadata.get("linked_uris") or [])
        if linked:
            # Backlinks mirrored onto the files an item cites are in the same record: say so.
            head += f", and updated the links of {linked} other file(s)"
    elif stale and not invalid:
        return f"Plan {plan_id}: nothing applied: {stale} item(s) stale; re-plan it or discard it"
    elif approved == 0:
        return f"Plan {plan_id}: nothing applied: no item was approved"
    else:
        head = f"Plan {plan_id}: nothing applied"
    record = f"history/{result.history_id}" if result.history_id else "none"
    text = f"{head}. Record: {record}."
    if refused:
        text += f" {stale + len(invalid)} item(s) refused: {why}."
    return text


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
