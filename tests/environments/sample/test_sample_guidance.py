"""How the scripted agent reads experience lines into rules and sequences."""

from __future__ import annotations

import pytest

from ovtui.environments.sample.guidance import (
    ASK,
    ApproachSequence,
    Rule,
    guidance_from_content,
    parse_rule,
    parse_sequence,
)


@pytest.mark.parametrize(
    ("line", "rules"),
    [
        (
            "ALWAYS call get_reservation before cancel_reservation",
            [Rule("precede", "get_reservation", "cancel_reservation")],
        ),
        (
            "- NEVER cancel the booking before you look up the reservation",
            [Rule("precede", "get_reservation", "cancel_reservation")],
        ),
        (
            "ALWAYS ask for the user's explicit confirmation before change_flight",
            [Rule("gate", "change_flight")],
        ),
        ("Never change anything without the user's explicit confirmation", [Rule("gate", "*")]),
        (
            "NEVER call refund_payment when the reservation is non-refundable",
            [Rule("forbid", "refund_payment", conditions=("non_refundable",))],
        ),
        (
            "IF the fare is basic economy THEN NEVER change the flight",
            [Rule("forbid", "change_flight", conditions=("basic_economy",))],
        ),
        (
            "ALWAYS call transfer_to_human when the customer demands compensation",
            [Rule("require", "transfer_to_human", conditions=("compensation",))],
        ),
        (
            "ALWAYS call send_confirmation after update_contact_email",
            [Rule("follow", "send_confirmation", "update_contact_email")],
        ),
        (
            "Offer travel credit instead of refund_payment when the reservation is non-refundable",
            [
                Rule("require", "issue_travel_credit", conditions=("non_refundable",)),
                Rule("forbid", "refund_payment", conditions=("non_refundable",)),
            ],
        ),
        ("Look the reservation up first", [Rule("precede", "get_reservation", "*")]),
        # Outside the vocabulary: ignored rather than guessed.
        (
            "ALWAYS make sure the customer's travel credit stays unchanged",
            [Rule("forbid", "issue_travel_credit")],
        ),
        ("ALWAYS escalate to a human when the moon is full", []),
        ("Greet the customer by name", []),
    ],
)
def test_rules(line: str, rules: list[Rule]) -> None:
    assert parse_rule(line) == rules


@pytest.mark.parametrize(
    ("line", "sequence"),
    [
        (
            "Steps that worked: get_customer → get_reservation → ask the user to confirm "
            "→ cancel_reservation",
            ApproachSequence(("get_customer", "get_reservation", ASK, "cancel_reservation")),
        ),
        (
            "IF the reservation is refundable THEN get_reservation -> refund_payment",
            ApproachSequence(("get_reservation", "refund_payment"), ("reservation.refundable=true",)),
        ),
        ("IF the moon is full THEN get_reservation → cancel_reservation", None),
        ("get_customer → read the tier", None),
        ("ALWAYS call get_reservation before cancel_reservation", None),
    ],
)
def test_sequences(line: str, sequence: ApproachSequence | None) -> None:
    assert parse_sequence(line) == sequence


def test_a_sequence_implies_its_lookups_and_its_confirmation() -> None:
    guidance = guidance_from_content(
        "## Situation\n- x\n## Approach\n- get_reservation → ask the user to confirm → cancel_reservation\n"
        "## Reflect\n- NEVER call cancel_reservation when the user declines"
    )
    assert guidance.predecessors("cancel_reservation") == ["get_reservation"]
    assert guidance.gated("cancel_reservation") and not guidance.gated("refund_payment")
    assert [r.conditions for r in guidance.forbidding("cancel_reservation")] == [("user_declines",)]


def test_situation_lines_are_not_instructions() -> None:
    guidance = guidance_from_content("## Situation\n- ALWAYS call refund_payment\n## Approach\n## Reflect\n")
    assert guidance.rules == [] and guidance.sequences == []
