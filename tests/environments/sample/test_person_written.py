"""The sample agent follows plain English about the environment's actions, not only its own phrases.

``person_written/`` holds five experiences worded by someone who never saw the agent's vocabulary:
tools named by what they do ("return the money to the original payment method"), situations put the
other way round ("unless they agree"), short answers to an earlier question ("if it can"), and the
earlier action stated as done ("once the booking is cancelled"). Before the agent read tools by their
names and descriptions and understood those forms, the five reached 40% of the test split with seven
lines "not understood"; they must now carry it through.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from experience_files_support import ROOT, experiences_in
from hypothesis import given
from hypothesis import strategies as st
from training_support import accuracy, evaluate, sample_start
from workspace_support import pristine_sample

from ovtui.core.domain import Experience, ExperienceSet
from ovtui.environments.sample.generate import read_cases
from ovtui.environments.sample.guidance import Rule, guidance_from_content, parse_rule, unread_lines
from ovtui.environments.sample.tool_words import ToolMatcher
from ovtui.environments.sample.tools import TOOL_SPECS

PERSON_WRITTEN = Path(__file__).parent / "person_written"
SAMPLE_TOOLS = ToolMatcher({name: spec.description for name, spec in TOOL_SPECS.items()})


def person_written() -> list[Experience]:
    return experiences_in(PERSON_WRITTEN)


def test_person_written_experiences_carry_the_test_split_without_training() -> None:
    start = sample_start()
    mine = person_written()
    assert len(mine) == 5
    test = read_cases(pristine_sample() / "datasets" / "support" / "test.jsonl")
    assert accuracy(evaluate(test, start)) == 0.0
    assert accuracy(evaluate(test, ExperienceSet(root_uri=ROOT, policies=[*start.policies, *mine]))) == 1.0


def test_every_person_written_line_is_understood() -> None:
    for experience in person_written():
        assert unread_lines(experience.content) == [], experience.name


@pytest.mark.parametrize(
    ("line", "rules"),
    [
        (
            "Once the booking is cancelled, send them a confirmation.",
            [Rule("follow", "send_confirmation", "cancel_reservation")],
        ),
        (
            "Only after the flight has been moved, send them a confirmation.",
            [Rule("follow", "send_confirmation", "change_flight")],
        ),
        (
            "After the email is updated, write the customer a short confirmation.",
            [Rule("follow", "send_confirmation", "update_contact_email")],
        ),
        ("Return the money to the original payment method.", [Rule("require", "refund_payment")]),
        ("Save the new address as the email on file.", [Rule("require", "update_contact_email")]),
        (
            "Unless they agree, keep the reservation as it is.",
            [
                Rule("forbid", "cancel_reservation", conditions=("user_declines",)),
                Rule("forbid", "change_flight", conditions=("user_declines",)),
            ],
        ),
        (
            "Unless the fare is basic economy, move the flight to the new date once they agree.",
            [
                Rule("require", "change_flight", conditions=("changeable", "user_confirms")),
                Rule("gate", "change_flight", conditions=("changeable",)),
            ],
        ),
        (
            "Unless the customer confirms, do not cancel.",
            [Rule("forbid", "cancel_reservation", conditions=("user_declines",))],
        ),
        (
            "Issue a refund unless the ticket is non-refundable.",
            [Rule("require", "refund_payment", conditions=("refundable",))],
        ),
        (
            "Only after reading the reservation, refund the payment.",
            [Rule("precede", "get_reservation", "refund_payment")],
        ),
        (
            "A ticket that isn't refundable never gets its payment refunded.",
            [Rule("forbid", "refund_payment", conditions=("non_refundable",))],
        ),
        (
            # The cancellation is named, but "can't be undone" forbids nothing.
            "Explain that the cancellation can't be undone and wait until they agree.",
            [
                Rule("require", "cancel_reservation", conditions=("user_confirms",)),
                Rule("gate", "cancel_reservation"),
            ],
        ),
    ],
)
def test_plain_english_about_the_actions(line: str, rules: list[Rule]) -> None:
    assert parse_rule(line) == rules


def test_a_short_answer_takes_its_situation_from_the_question_asked_before() -> None:
    guidance = guidance_from_content(
        "## Approach\n- See whether the fare can be refunded.\n- If it can, refund the payment.\n"
        "- If it can't, add the fare to their account as travel credit."
    )
    assert [(r.kind, r.tool, r.conditions) for r in guidance.rules] == [
        ("require", "refund_payment", ("refundable",)),
        ("require", "issue_travel_credit", ("non_refundable",)),
    ]


def test_what_the_agent_cannot_act_on_is_still_flagged() -> None:
    content = (
        "## Approach\n- If it can, refund the payment.\n"  # no question before it: which situation?
        "- Pass the conversation on to a person.\n"  # one word of one tool's description: too weak
        "- Unless they are in a hurry, refund the payment.\n"  # a situation the agent cannot tell
        "- Send them a confirmation."
    )
    assert unread_lines(content) == [
        (2, "- If it can, refund the payment."),
        (3, "- Pass the conversation on to a person."),
        (4, "- Unless they are in a hurry, refund the payment."),
    ]


@pytest.mark.parametrize(
    ("phrase", "tool"),
    [
        ("return the money to the original payment method", "refund_payment"),
        ("message them a confirmation", "send_confirmation"),
        ("add the fare to their account as travel credit", "issue_travel_credit"),
        ("the flight has been moved", "change_flight"),
        ("read their customer record", "get_customer"),
        ("changing anything", None),  # an action word alone names no tool
        ("get a clear yes", None),
        ("be kind and patient", None),
    ],
)
def test_sample_tools_by_their_names_and_descriptions(phrase: str, tool: str | None) -> None:
    match = SAMPLE_TOOLS.match(phrase)
    assert (match.tool if match else None) == tool


@pytest.mark.parametrize("tool", sorted(TOOL_SPECS))
def test_each_sample_tool_is_named_by_its_own_schema(tool: str) -> None:
    for phrase in (TOOL_SPECS[tool].description, tool.replace("_", " ")):
        match = SAMPLE_TOOLS.match(phrase)
        assert match is not None and match.tool == tool, phrase


LIBRARY = ToolMatcher(
    {
        "renew_loan": "Extend the due date of a borrowed book.",
        "place_hold": "Reserve a book that another member has checked out.",
        "pay_fine": "Settle an overdue fine on a member account.",
        "email_member": "Send the member an email.",
        "waive_fine": "Cancel an overdue fine on a member account.",
    }
)


@pytest.mark.parametrize(
    ("phrase", "tool"),
    [
        ("push the due date of their book back", "renew_loan"),
        ("renew the loan", "renew_loan"),
        ("reserve the book for them", "place_hold"),
        ("send them an email about it", "email_member"),
        ("settle the fine", "pay_fine"),
        ("cancel the fine", "waive_fine"),
        ("the overdue fine on their account", None),  # both fine tools alike: a tie names neither
        ("check the weather", None),
    ],
)
def test_a_tool_set_it_was_not_written_for(phrase: str, tool: str | None) -> None:
    match = LIBRARY.match(phrase)
    assert (match.tool if match else None) == tool


def test_each_phrase_of_a_text_names_its_own_tool_in_order() -> None:
    text = "renew the loan, then send them an email"
    found = LIBRARY.find(text)
    assert [m.tool for m in found] == ["renew_loan", "email_member"]
    assert [text[m.start : m.end] for m in found] == ["renew the loan", "send them an email"]


_VERBS = ("ship", "track", "refill", "archive", "label", "bill", "audit", "paint")
_OBJECTS = ("parcel", "order", "invoice", "ledger", "crate", "voucher", "fence", "kettle")


@given(
    verbs=st.permutations(_VERBS),
    objects=st.permutations(_OBJECTS),
    count=st.integers(min_value=2, max_value=len(_VERBS)),
    data=st.data(),
)
def test_a_phrase_in_a_tools_own_words_names_that_tool(
    verbs: list[str], objects: list[str], count: int, data: st.DataObject
) -> None:
    tools = {f"{v}_{o}": f"{v.capitalize()} the customer's {o}." for v, o in zip(verbs, objects, strict=True)}
    chosen = dict(list(tools.items())[:count])
    matcher = ToolMatcher(chosen)
    name = data.draw(st.sampled_from(sorted(chosen)))
    verb, _, thing = name.partition("_")
    match = matcher.match(f"please {verb} their {thing} today")
    assert match is not None and match.tool == name
    # Twins: the same words for two tools are a tie, and a tie names neither.
    twins = ToolMatcher({**chosen, f"{name}_again": chosen[name]})
    assert twins.match(f"please {verb} their {thing} today") is None
