"""Issue #12: the sample agent follows experiences a person writes in plain English, typos and all.

``fixtures/plain_english/`` holds one experience per intent in a support lead's words (ours, not the
learner's dialect). With no training at all they must carry the agent through the test split.
"""

from __future__ import annotations

import pytest
from experience_files_support import ROOT, experiences_in
from repo_paths import FIXTURES
from training_support import accuracy, evaluate, sample_start
from workspace_support import pristine_sample

from ovtui.core.domain import Experience, ExperienceSet
from ovtui.environments.sample.generate import read_cases
from ovtui.environments.sample.guidance import (
    ANY_ACTION,
    Rule,
    guidance_from_content,
    parse_rule,
    unread_lines,
)
from ovtui.environments.sample.understanding import classify_intent
from ovtui.environments.sample.vocabulary import correct

PLAIN = FIXTURES / "plain_english"


def plain_experiences() -> list[Experience]:
    return experiences_in(PLAIN)


def test_hand_written_experiences_work_without_training() -> None:
    sample = pristine_sample()
    start = sample_start()
    mine = plain_experiences()
    assert len(mine) == 5
    policy_set = ExperienceSet(root_uri=ROOT, policies=[*start.policies, *mine])
    test = read_cases(sample / "datasets" / "support" / "test.jsonl")
    assert accuracy(evaluate(test, start)) <= 0.40
    assert accuracy(evaluate(test, policy_set)) >= 0.80


def test_every_hand_written_line_is_understood() -> None:
    for experience in plain_experiences():
        assert unread_lines(experience.content) == [], experience.name


def test_a_line_the_agent_cannot_use_is_reported_with_its_number() -> None:
    content = (
        "## Situation\n- x\n## Approach\n- Open the reservation first.\n- Be kind and patient.\n"
        "## Reflect\n- Smile"
    )
    assert unread_lines(content) == [(5, "- Be kind and patient."), (7, "- Smile")]


@pytest.mark.parametrize(
    ("line", "rules"),
    [
        ("Open the reservation first.", [Rule("precede", "get_reservation", ANY_ACTION)]),
        ("Hand it over to a human agent.", [Rule("require", "transfer_to_human")]),
        (
            "Put the fare on their account as travel credit when it can't be refunded.",
            [Rule("require", "issue_travel_credit", conditions=("non_refundable",))],
        ),
        ("Only go ahead once they say yes.", [Rule("gate", ANY_ACTION)]),
        (
            "Never refund a non-refundable ticket.",
            [Rule("forbid", "refund_payment", conditions=("non_refundable",))],
        ),
        (
            "If they say no, leave the booking alone.",
            [
                Rule("forbid", "cancel_reservation", conditions=("user_declines",)),
                Rule("forbid", "change_flight", conditions=("user_declines",)),
            ],
        ),
        (
            "Cancle the bookng, then send a confirmation.",
            [
                Rule("require", "cancel_reservation"),
                Rule("follow", "send_confirmation", "cancel_reservation"),
            ],
        ),
    ],
)
def test_plain_english_rules(line: str, rules: list[Rule]) -> None:
    assert parse_rule(line) == rules


def test_a_situation_named_in_one_sentence_carries_to_the_next() -> None:
    guidance = guidance_from_content(
        "## Approach\n- Basic economy fares can't be changed - don't move those."
    )
    assert [(r.kind, r.tool, r.conditions) for r in guidance.rules] == [
        ("forbid", "change_flight", ("basic_economy",))
    ]


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("could you chnage my flight", "change"),
        ("pls cancle my reservaton", "cancel"),
        ("I want a refnud", "refund"),
        ("my emial needs updating", "email"),
        ("the flight was delayd and I want compensaton", "complaint"),
    ],
)
def test_intents_tolerate_typos(text: str, intent: str) -> None:
    assert classify_intent(text) == intent


def test_ordinary_words_are_not_corrected() -> None:
    assert correct("My plans fell through, please help") == "My plans fell through, please help"
    assert correct("non-refundable reservaton's fare") == "non-refundable reservation's fare"
