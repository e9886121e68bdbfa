"""The contradiction gate: ALWAYS x against NEVER x and IF c THEN a against IF c THEN not a, found
offline, held for a person, shown with both lines, and settled only by the person's choice."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ovtui.core.domain import Experience, ExperienceSet, PolicyPlanItem, PolicyStatus, PolicyUpdatePlan
from ovtui.train.review.gates.contradictions import (
    CONTRADICTIONS,
    choose,
    mark_contradictions,
    parse_rule,
    unchosen,
)
from ovtui.train.review.policy import ReviewPolicy

RESERVED = {"if", "then", "when", "whenever", "always", "never", "not", "do", "don't", "must", "call"}
WORD = st.from_regex(r"[a-z]{2,9}", fullmatch=True).filter(lambda w: w not in RESERVED)
PHRASE = st.lists(WORD, min_size=1, max_size=4).map(" ".join)
BULLET = st.sampled_from(["- ", "* ", "1. ", ""])
HIDDEN = st.sampled_from(["\u200b", "\u200d", "\u2060", "\ufeff", "\u202e", "\u00ad"])
COMPENSATION = "## Situation\n- A flight was delayed\n## Reflect\n- NEVER offer compensation\n"


def set_of(**bodies: str) -> ExperienceSet:
    return ExperienceSet(
        root_uri="viking://user/default/memories/experiences",
        policies=[
            Experience(name=n, uri=f"viking://x/{n}.md", version=1, status=PolicyStatus.PRODUCTION, content=b)
            for n, b in bodies.items()
        ],
    )


def upsert(name: str, before: str | None, after: str) -> PolicyPlanItem:
    return PolicyPlanItem(kind="upsert", target_name=name, before_content=before, after_content=after)


@settings(max_examples=150, deadline=None)
@given(action=PHRASE, condition=st.none() | PHRASE, bullets=st.tuples(BULLET, BULLET), shout=st.booleans())
def test_opposite_rules_for_the_same_situation_contradict_whatever_their_style(
    action: str, condition: str | None, bullets: tuple[str, str], shout: bool
) -> None:
    always, never = ("ALWAYS", "NEVER") if shout else ("always", "never")
    if condition is None:
        lines = (f"{always} {action}", f"{never} {action}.")
    else:
        lines = (f"IF {condition} THEN {action}", f"if {condition} then {never} {action}")
    first, second = parse_rule(bullets[0] + lines[0]), parse_rule(bullets[1] + lines[1])
    assert first is not None and second is not None
    assert first.contradicts(second) and second.contradicts(first)


@settings(max_examples=150, deadline=None)
@given(action=PHRASE, condition=PHRASE, elsewhere=PHRASE, hidden=HIDDEN, at=st.integers(min_value=0))
def test_another_situation_is_no_contradiction_and_a_hidden_character_hides_none(
    action: str, condition: str, elsewhere: str, hidden: str, at: int
) -> None:
    rule = parse_rule(f"- IF {condition} THEN {action}")
    assert rule is not None
    other = parse_rule(f"- IF {elsewhere} THEN NEVER {action}")
    assert other is not None and rule.contradicts(other) == (condition == elsewhere)
    same = parse_rule(f"- IF {condition} THEN {action}")
    assert same is not None and not rule.contradicts(same)
    cut = at % (len(action) + 1)
    disguised = parse_rule(f"- IF {condition} THEN do not {action[:cut]}{hidden}{action[cut:]}")
    assert disguised is not None and rule.contradicts(disguised)


def test_a_step_of_a_sequence_against_a_rule_that_forbids_it() -> None:
    sequence = parse_rule("- IF refundable THEN get_order → refund_payment → send_confirmation")
    forbids = parse_rule("- IF refundable THEN NEVER call refund_payment")
    assert sequence is not None and forbids is not None and sequence.contradicts(forbids)
    assert parse_rule("- Look the reservation up first") is None
    assert parse_rule("## Reflect") is None


def test_a_plan_item_against_another_experience_is_held_shown_and_settled_by_a_person() -> None:
    policy_set = set_of(delays=COMPENSATION)
    before = "## Situation\n- A flight was delayed\n- The customer is upset\n## Reflect\n- ALWAYS apologise"
    item = upsert("upset_customers", before, before + "\n- ALWAYS offer compensation")
    clean = upsert("baggage", None, "## Situation\n- Bags\n## Reflect\n- ALWAYS weigh the bag")
    plan = PolicyUpdatePlan(items=[item, clean])

    assert mark_contradictions(plan, policy_set) == 1
    [finding] = item.metadata[CONTRADICTIONS]
    assert finding["rule"] == "- ALWAYS offer compensation" and finding["line"] == 6
    assert (finding["other"], finding["other_line"]) == ("delays", "- NEVER offer compensation")
    assert CONTRADICTIONS not in clean.metadata

    decided = ReviewPolicy("all").decisions(plan)
    assert decided[0].decision == "pending" and "choose which stands" in decided[0].note
    assert decided[1].decision == "approved"

    choose(item, 0, "other")  # the other experience's line stands: this one is not written
    assert "offer compensation" not in str(item.after_content) and not unchosen(item)
    assert mark_contradictions(plan, policy_set) == 0


def test_the_same_rule_in_an_experience_for_another_situation_is_no_contradiction() -> None:
    policy_set = set_of(delays=COMPENSATION)
    item = upsert(
        "refunds", None, "## Situation\n- A refund is asked for\n## Reflect\n- ALWAYS offer compensation"
    )
    assert mark_contradictions(PolicyUpdatePlan(items=[item]), policy_set) == 0


def test_a_choice_survives_the_gate_running_again_and_both_can_stand() -> None:
    policy_set = set_of(delays=COMPENSATION)
    item = upsert(
        "upset", None, "## Situation\n- A flight was delayed\n## Reflect\n- ALWAYS offer compensation"
    )
    plan = PolicyUpdatePlan(items=[item])
    mark_contradictions(plan, policy_set)
    choose(item, 0, "both")
    mark_contradictions(plan, policy_set)
    assert item.metadata[CONTRADICTIONS][0]["stands"] == "both" and not unchosen(item)
    assert ReviewPolicy("all").decisions(plan)[0].decision == "approved"


def test_two_lines_one_item_adds_to_its_own_file_are_flagged() -> None:
    item = upsert("seats", None, "## Reflect\n- ALWAYS change the seat\n- NEVER change the seat")
    assert mark_contradictions(PolicyUpdatePlan(items=[item]), set_of()) == 1
    assert {(c["rule"], c["other_line"]) for c in item.metadata[CONTRADICTIONS]} == {
        ("- ALWAYS change the seat", "- NEVER change the seat"),
        ("- NEVER change the seat", "- ALWAYS change the seat"),
    }


def test_two_items_of_one_plan_that_contradict_each_other_are_both_flagged() -> None:
    first = upsert("a", None, "- Seat change\n## Reflect\n- IF the fare is basic THEN NEVER change the seat")
    second = upsert("b", None, "- Seat change\n## Reflect\n- IF the fare is basic THEN change the seat")
    plan = PolicyUpdatePlan(items=[first, second])
    assert mark_contradictions(plan, set_of()) == 2
