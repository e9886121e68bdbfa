"""Each directive form followed, violated and not applicable on hand-made trajectories, lines read
into directives, and generated tool sequences against generated directives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ovtui.core.domain import Message, TextPart, ToolPart
from ovtui.plugins.adherence import ASK, Directive
from ovtui.train.adherence.checker import Trajectory, check
from ovtui.train.adherence.directives import directives_of, read_line

RESERVATION = {"reservation_id": "R1", "refundable": False, "cabin": "economy"}
Step = str | tuple[str, dict[str, Any]]


def conversation(*steps: Step) -> list[Message]:
    """A user request, then each step: a tool call (with its JSON answer) or ``"yes"``/``"no"``
    (the agent asks to confirm, the user answers)."""
    messages = [Message(role="user", parts=[TextPart(text="Please cancel R1.")])]
    for step in steps:
        if step in ("yes", "no"):
            messages.append(
                Message(role="assistant", parts=[TextPart(text="Shall I go on? Please confirm.")])
            )
            messages.append(Message(role="user", parts=[TextPart(text=f"{str(step).title()}.")]))
            continue
        tool, output = step if isinstance(step, tuple) else (step, {"ok": True})
        part = ToolPart(
            tool_id=f"c{len(messages)}", tool_name=tool, tool_input={}, tool_output=json.dumps(output)
        )
        messages.append(Message(role="assistant", parts=[part]))
    return messages


def verdict(line: str, *steps: Step) -> str:
    return check(read_line(line), Trajectory.of(conversation(*steps)))


LOOKUP = ("get_reservation", RESERVATION)
CASES = [
    # ALWAYS x, with and without a situation
    ("ALWAYS call send_confirmation", ("cancel_reservation", "send_confirmation"), "followed"),
    ("ALWAYS call send_confirmation", ("cancel_reservation",), "violated"),
    (
        "ALWAYS call transfer_to_human when the reservation is not refundable",
        (LOOKUP, "transfer_to_human"),
        "followed",
    ),
    ("ALWAYS call transfer_to_human when the reservation is not refundable", (LOOKUP,), "violated"),
    ("ALWAYS call transfer_to_human when the reservation is refundable", (LOOKUP,), "not_applicable"),
    (
        "ALWAYS call transfer_to_human when the reservation is refundable",
        ("cancel_reservation",),
        "unchecked",
    ),
    # NEVER x
    ("NEVER call refund_payment", ("cancel_reservation",), "followed"),
    ("NEVER call refund_payment", ("cancel_reservation", "refund_payment"), "violated"),
    (
        "IF reservation.refundable=false THEN NEVER call refund_payment",
        (LOOKUP, "refund_payment"),
        "violated",
    ),
    (
        "IF reservation.refundable=true THEN NEVER call refund_payment",
        (LOOKUP, "refund_payment"),
        "not_applicable",
    ),
    (
        "NEVER call refund_payment when the reservation's cabin is not economy",
        (LOOKUP, "refund_payment"),
        "not_applicable",
    ),
    # order
    ("ALWAYS call get_reservation before cancel_reservation", (LOOKUP, "cancel_reservation"), "followed"),
    ("ALWAYS call get_reservation before cancel_reservation", ("cancel_reservation", LOOKUP), "violated"),
    ("ALWAYS call get_reservation before cancel_reservation", (LOOKUP,), "not_applicable"),
    (
        "ALWAYS call send_confirmation after cancel_reservation",
        ("cancel_reservation", "send_confirmation"),
        "followed",
    ),
    (
        "ALWAYS call send_confirmation after cancel_reservation",
        ("send_confirmation", "cancel_reservation"),
        "violated",
    ),
    ("ALWAYS call send_confirmation after cancel_reservation", ("send_confirmation",), "not_applicable"),
    # confirmation
    ("ALWAYS ask the user to confirm before cancel_reservation", ("yes", "cancel_reservation"), "followed"),
    ("ALWAYS ask the user to confirm before cancel_reservation", ("cancel_reservation", "yes"), "violated"),
    ("ALWAYS ask the user to confirm before cancel_reservation", ("no", "cancel_reservation"), "violated"),
    ("ALWAYS ask the user to confirm before cancel_reservation", (LOOKUP, "no"), "not_applicable"),
    # steps, guarded or not
    (
        "IF the reservation is not refundable THEN get_reservation → transfer_to_human",
        (LOOKUP, "transfer_to_human"),
        "followed",
    ),
    (
        "IF the reservation is not refundable THEN get_reservation → transfer_to_human",
        ("transfer_to_human", LOOKUP),
        "violated",
    ),
    (
        "IF the reservation is refundable THEN get_reservation → transfer_to_human",
        (LOOKUP, "transfer_to_human"),
        "not_applicable",
    ),
    (
        f"get_reservation → {ASK} → cancel_reservation → refund_payment",
        (LOOKUP, "yes", "cancel_reservation"),
        "violated",
    ),
    (f"get_reservation → {ASK} → cancel_reservation", (LOOKUP, "no"), "followed"),
    (f"get_reservation → {ASK} → cancel_reservation", ("transfer_to_human",), "not_applicable"),
    (f"get_reservation → {ASK} → cancel_reservation", (LOOKUP, "yes", "cancel_reservation"), "followed"),
    (f"get_reservation → {ASK} → cancel_reservation", (LOOKUP, "cancel_reservation"), "violated"),
    # what no record shows
    ("Greet the customer warmly", ("cancel_reservation",), "unchecked"),
    ("IF the customer sounds upset THEN call transfer_to_human", ("transfer_to_human",), "unchecked"),
]


@pytest.mark.parametrize(("line", "steps", "expected"), CASES)
def test_each_form_on_a_hand_made_trajectory(line: str, steps: tuple[Step, ...], expected: str) -> None:
    assert verdict(line, *steps) == expected


def test_lines_read_into_directives() -> None:
    content = (
        "## Situation\n- A cancellation.\n## Approach\n- get_reservation → cancel_reservation\n"
        "## Reflect\n- NEVER call refund_payment when the reservation is not refundable\n- Be kind\n"
    )
    assert directives_of(content) == [
        Directive(
            "steps", ("get_reservation", "cancel_reservation"), (), "get_reservation → cancel_reservation"
        ),
        Directive(
            "never",
            ("refund_payment",),
            ("reservation.refundable=false",),
            "NEVER call refund_payment when the reservation is not refundable",
        ),
        Directive("unchecked", (), line="Be kind"),
    ]
    # Only the tools there are count when the environment names them.
    assert read_line("ALWAYS call get_weather", known={"get_reservation"}).kind == "unchecked"


TOOLS = ("get_reservation", "cancel_reservation", "refund_payment", "send_confirmation")
sequences = st.lists(st.sampled_from(TOOLS), max_size=8)


@settings(max_examples=300, deadline=None)
@given(sequences, st.sampled_from(TOOLS), st.sampled_from(TOOLS))
def test_generated_sequences_against_generated_directives(calls: list[str], x: str, y: str) -> None:
    path = Trajectory.of(conversation(*calls))
    always = check(Directive("always", (x,)), path)
    never = check(Directive("never", (x,)), path)
    assert (always == "followed") == (x in calls) == (never == "violated")
    assert {always, never} <= {"followed", "violated"}
    if x != y:
        before = check(Directive("before", (x, y)), path)
        assert (before == "not_applicable") == (y not in calls)
        if y in calls:
            assert (before == "followed") == (x in calls[: calls.index(y)])
        after = check(Directive("after", (x, y)), path)
        if y in calls:
            assert (after == "followed") == (x in calls[calls.index(y) + 1 :])
        steps = check(Directive("steps", (x, y)), path)
        if x in calls or y in calls:  # sample tools that are not lookups make it applicable
            in_order = x in calls and y in calls[calls.index(x) + 1 :]
            assert (steps == "followed") == in_order


@settings(max_examples=200, deadline=None)
@given(sequences, st.sampled_from(TOOLS), st.booleans())
def test_a_situation_that_does_not_hold_never_applies(calls: list[str], x: str, refundable: bool) -> None:
    record = {**RESERVATION, "refundable": refundable}
    path = Trajectory.of(conversation(("get_reservation", record), *calls))
    other = "true" if not refundable else "false"
    for kind in ("always", "never"):
        assert check(Directive(kind, (x,), (f"reservation.refundable={other}",)), path) == "not_applicable"
