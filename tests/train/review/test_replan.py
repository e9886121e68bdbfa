"""What a re-plan keeps of a person's decisions: an item that comes back with the same target and text
keeps its decision and note; one whose text or target changed, or that two old plans decided
differently, waits for a person again."""

from __future__ import annotations

from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.train.review.plans import Decision, ItemDecision, PendingPlan
from ovtui.train.review.replan import kept_decisions


def upsert(name: str, text: str) -> PolicyPlanItem:
    return PolicyPlanItem(kind="upsert", target_name=name, after_content=text)


def old_plan(plan_id: str, decided: list[tuple[PolicyPlanItem, Decision, str]]) -> PendingPlan:
    items = [item for item, _, _ in decided]
    decisions = [ItemDecision(item=i, decision=d, note=n) for i, (_, d, n) in enumerate(decided)]
    return PendingPlan(plan_id=plan_id, plan=PolicyUpdatePlan(items=items), decisions=decisions)


def verdicts(fresh: list[PolicyPlanItem], old: list[PendingPlan]) -> list[tuple[str, str]]:
    decisions = kept_decisions(PolicyUpdatePlan(items=fresh), old)
    assert [d.item for d in decisions] == list(range(len(fresh)))
    return [(d.decision, d.note) for d in decisions]


def test_unchanged_items_keep_their_decision_and_note_and_changed_ones_wait_again() -> None:
    old = old_plan(
        "old",
        [
            (upsert("refunds", "- ALWAYS check the fare"), "approved", "reads right"),
            (upsert("seating", "- offer an aisle"), "rejected", "too vague"),
            (upsert("baggage", "- weigh the bag"), "approved", "fine"),
            (upsert("meals", "- ask about allergies"), "pending", "check with ops"),
            (PolicyPlanItem(kind="delete", target_name="legacy"), "approved", ""),
        ],
    )
    fresh = [
        upsert("seating", "- offer an aisle"),  # moved, same text: the decision follows the item
        upsert("baggage", "- weigh the bag and the carry-on"),  # its text changed
        upsert("refunds", "- ALWAYS check the fare"),
        upsert("meals", "- ask about allergies"),  # undecided with a note: the note stays
        upsert("legacy", "- kept after all"),  # was a delete: another change to the same file
        upsert("upgrades", "- new"),
    ]
    assert verdicts(fresh, [old]) == [
        ("rejected", "too vague"),
        ("pending", ""),
        ("approved", "reads right"),
        ("pending", "check with ops"),
        ("pending", ""),
        ("pending", ""),
    ]


def test_a_change_two_old_plans_decided_differently_waits_with_both_notes() -> None:
    same = upsert("refunds", "- ALWAYS check the fare")
    first = old_plan("first", [(same, "approved", "good")])
    second = old_plan("second", [(same, "rejected", "duplicate")])
    agreeing = old_plan("third", [(same, "approved", "good")])
    assert verdicts([same], [first, second]) == [("pending", "good / duplicate")]
    assert verdicts([same], [first, agreeing]) == [("approved", "good")]
