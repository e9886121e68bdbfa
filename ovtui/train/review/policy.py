"""The review gate between plan and apply: who decides each item of a plan, and how many must.

A policy decides per item: ``all`` approves everything, ``none`` rejects everything,
``confidence>=X`` approves items at or above X, ``gate`` approves what validation finds better by
the case (``ovtui.train.inference``: the exact sign test, its interval, enough informative cases),
``ask`` parks the plan in ``.ovtui/pending/``
for the app (the store is ``ovtui.train.review.pending``; the words are parsed by
``ovtui.core.review_grammar``). The decisions, the parked plan and the one path that applies a
reviewed plan are ``ovtui.train.review.plans``. A parked plan keeps its evidence (the analysed
rollouts) so it can be re-planned later against the policy set as it is then
(``ovtui.train.review.replan``). The app and ``ovtui review`` share all of this.
"""

from __future__ import annotations

from collections.abc import Collection

from ovtui.core.config import ChangeKind
from ovtui.core.decisions import Approval
from ovtui.core.domain import PolicyApplyResult, PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.core.review_grammar import parse_review_policy
from ovtui.train.inference import infer_counts
from ovtui.train.review.approvals import tally
from ovtui.train.review.gates.contradictions import contradiction_note, unchosen
from ovtui.train.review.gates.sanitizer import held_note, item_hazards
from ovtui.train.review.gates.validation import validation_line
from ovtui.train.review.plans import Decision, ItemDecision, PendingPlan
from ovtui.train.review.rejections import marked_line


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
    """The items that still lack a second person's approval of a hunk someone approved, one line
    each (what applying refuses): pending ones with an approval, and approved ones the rule now
    covers (``approvals.tally``)."""
    lines = []
    for decision, item in zip(pending.decisions, pending.plan.items, strict=True):
        if decision.decision == "rejected":
            continue
        counts = tally(item, decision.approvals, second_approver_for)
        approved_alone = decision.decision == "approved" and not decision.approvals
        if approved_alone and approvals_needed(item, second_approver_for) < 2:
            continue
        if counts.short or (decision.decision == "approved" and not counts.approved):
            lines.append(
                f"item {decision.item} ({change_kind(item)} {item.target_name}) has "
                f"{counts.line()}: a second reviewer must approve it"
            )
    return lines


class ReviewPolicy:
    """Decides each item of a plan by the policy ``spec`` names (``ovtui.core.review_grammar``).
    An item whose kind is in ``second_approver_for`` is never approved automatically: two people
    must."""

    def __init__(self, spec: str, second_approver_for: Collection[str] = ()) -> None:
        self.spec = spec.strip()
        self.second_approver_for = frozenset(second_approver_for)
        try:
            self.rule = parse_review_policy(spec)
        except ValueError as exc:
            raise OvtuiError(str(exc)) from None

    @property
    def asks(self) -> bool:
        return self.rule.kind == "ask"

    def following(self, spec: str) -> ReviewPolicy:
        """The policy a person chose for the rest of a run (``RunSteering.approve``): the new rule,
        with the workspace's two-reviewer rule kept (steering to ``all`` must not
        approve alone what needs two reviewers)."""
        return ReviewPolicy(spec, self.second_approver_for)

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
        gate approves only when validation gains by the case (else the person decides)."""
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
            if decision == "approved" and (rejected := marked_line(item)):
                decision, note = "pending", f"held: {rejected}: a person decides"
            if decision == "approved" and approvals_needed(item, self.second_approver_for) > 1:
                decision, note = "pending", f"held: a {change_kind(item)} needs two reviewers"
            reviewer = f"policy:{self.spec}" if decision != "pending" else ""
            approvals = [Approval(reviewer=reviewer)] if decision == "approved" else []
            result.append(
                ItemDecision(item=index, decision=decision, note=note, reviewer=reviewer, approvals=approvals)
            )
        return result

    def _gate(self, plan: PolicyUpdatePlan) -> tuple[Decision, str]:
        measured = plan.metadata.get("validation")
        if not measured:
            return "pending", "held: no validation cases to check the plan against"
        line = validation_line(measured)
        found = infer_counts(measured["cases"], len(measured["gained"]), len(measured["lost"]))
        rule = f"Δ {found.delta:+.1%}, 95% CI [{found.ci[0]:+.1%}, {found.ci[1]:+.1%}], p={found.p_value:.3g}"
        null = measured.get("null")
        if null is not None:
            moved = infer_counts(measured["cases"], len(null["gained"]), len(null["lost"]))
            reruns = int(null.get("reruns", 1))
            runs = "rerun" if reruns == 1 else f"{reruns} reruns"
            rule += f"; A/A {runs} moved {moved.informative} case(s)"
            if moved.direction != "same":
                return "pending", f"held: {line}: the policy against itself differs ({rule}): unstable"
        if found.direction != "better":
            why = found.why_not() or "it is worse"
            return "pending", f"held: {line}: no gain by the case ({rule}; {why})"
        return "approved", f"auto: gate ({line}; {rule})"


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
