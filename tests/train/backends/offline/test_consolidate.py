"""Consolidation of lessons: generalisation, distinguishing facts, no contradictions, no repeats, order."""

from __future__ import annotations

import itertools

from ovtui.plugins.wording.lessons import ASK_STEP, Lesson, parse_lesson
from ovtui.train.backends.offline.consolidate import consolidate, contradictions

NOT_REFUNDABLE = {"reservation.refundable": "false", "reservation.status": "active"}
REFUNDABLE = {"reservation.refundable": "true", "reservation.status": "active"}


def lesson(kind: str, *tools: str, **facts: str) -> Lesson:
    return Lesson(kind, tools).with_facts({k.replace("__", "."): v for k, v in facts.items()})  # type: ignore[arg-type]


def rendered(lessons: list[Lesson]) -> list[str]:
    return [x.render() for x in consolidate(lessons)]


def test_every_rendered_lesson_parses_back_to_itself() -> None:
    for x in [
        lesson("steps", "get_reservation", ASK_STEP, "cancel_reservation", user__answer="yes"),
        lesson("steps", "get_reservation", "issue_travel_credit"),
        lesson("order", "get_customer", "cancel_reservation"),
        lesson("confirm", "change_flight", reservation__cabin="premium_economy"),
        lesson("after", "send_confirmation", "change_flight"),
        lesson("always", "transfer_to_human"),
        lesson("never", "refund_payment", reservation__refundable="false"),
    ]:
        assert parse_lesson(f"- {x.render()}") == x


def test_instances_generalise_to_what_they_share() -> None:
    first = Lesson("never", ("refund_payment",)).with_facts(
        {**NOT_REFUNDABLE, "reservation.cabin": "economy"}
    )
    second = Lesson("never", ("refund_payment",)).with_facts(
        {**NOT_REFUNDABLE, "reservation.cabin": "business"}
    )
    steps = Lesson("steps", ("get_reservation", "refund_payment")).with_facts(REFUNDABLE)
    assert rendered([first, second, steps]) == [
        "IF the reservation is refundable THEN get_reservation → refund_payment",
        "NEVER call refund_payment when the reservation is not refundable",
    ]


def test_a_never_learned_without_looking_yields_to_a_lesson_about_doing_it() -> None:
    never = Lesson("never", ("cancel_reservation",))
    confirm = Lesson("confirm", ("cancel_reservation",))
    assert rendered([never, confirm]) == ["ALWAYS ask the user to confirm before cancel_reservation"]
    # With nothing that shows the action is ever right, the NEVER stands (for the whole intent).
    assert rendered([never]) == ["NEVER call cancel_reservation"]


def test_a_reflect_lesson_the_steps_carry_out_is_not_repeated() -> None:
    steps = Lesson("steps", ("get_customer", ASK_STEP, "update_contact_email", "send_confirmation"))
    order = Lesson("order", ("get_customer", "update_contact_email"))
    after = Lesson("after", ("send_confirmation", "update_contact_email"))
    unrelated = Lesson("order", ("get_reservation", "refund_payment"))
    assert rendered([steps, order, after, unrelated]) == [
        f"{'Steps that worked:'} get_customer → {ASK_STEP} → update_contact_email → send_confirmation",
        "ALWAYS call get_reservation before refund_payment",
    ]


def test_output_does_not_depend_on_the_order_lessons_arrive_in() -> None:
    lessons = [
        Lesson("never", ("change_flight",)).with_facts({"reservation.cabin": "basic_economy"}),
        Lesson("steps", ("get_reservation", ASK_STEP, "change_flight")).with_facts(
            {"reservation.cabin": "economy"}
        ),
        Lesson("steps", ("get_reservation", ASK_STEP, "change_flight")).with_facts(
            {"reservation.cabin": "business"}
        ),
        Lesson("always", ("get_reservation",)),
    ]
    outputs = {tuple(rendered(list(p))) for p in itertools.permutations(lessons)}
    assert len(outputs) == 1


def test_the_checker_finds_contradicting_lines() -> None:
    lines = [
        "- Steps that worked: get_reservation → cancel_reservation",
        "- NEVER call cancel_reservation",
        "- NEVER call refund_payment when the reservation is not refundable",
        "- IF the reservation is refundable THEN get_reservation → refund_payment",
        "- ALWAYS call refund_payment when the reservation's status is active",
        "- a line a person wrote",
    ]
    assert contradictions(lines) == [
        (lines[1], lines[0]),
        (lines[2], lines[4]),
    ]
