"""The evaluator: every criterion kind passes and fails, scoring, and re-grading from messages."""

from __future__ import annotations

from typing import Any

import pytest

from ovtui.core.domain import Case, Message, Rollout, Rubric, RubricCriterion, TextPart, ToolPart
from ovtui.environments.sample.criteria import (
    CRITERION_KINDS,
    confirmed_before,
    forbidden_call,
    is_affirmative,
    order,
    required_call,
    state,
)
from ovtui.environments.sample.evaluator import SampleEvaluator, grade, replay
from ovtui.environments.sample.generate import generate_dataset

DB = {
    "customers": {"C1000": {"name": "Ada Berg", "email": "ada@example.com", "travel_credit": 0}},
    "reservations": {
        "AB1234": {
            "customer_id": "C1000",
            "date": "2026-04-01",
            "cabin": "economy",
            "refundable": False,
            "price": 300,
            "status": "active",
        }
    },
}


def make_case(*criteria: RubricCriterion) -> Case:
    return Case(
        name="c",
        task_signature="t",
        input={"user_query": "q", "db": DB},
        rubric=Rubric(name="t", criteria=list(criteria)),
    )


def user(text: str) -> Message:
    return Message(role="user", parts=[TextPart(text=text)])


def say(text: str) -> Message:
    return Message(role="assistant", parts=[TextPart(text=text)])


def call(tool: str, status: str = "completed", **args: Any) -> Message:
    part = ToolPart(tool_id=tool, tool_name=tool, tool_input=args, tool_output="{}", tool_status=status)
    return Message(role="assistant", parts=[part])


def result_of(criterion: RubricCriterion, messages: list[Message]) -> tuple[bool, list[str]]:
    case = make_case(criterion)
    evaluation = grade(case, messages, replay(case, messages))
    only = evaluation.criterion_results[0]
    return only.passed, only.feedback


CANCEL = [user("cancel AB1234"), call("cancel_reservation", reservation_id="AB1234")]
LOOKUP_THEN_CANCEL = [
    user("cancel AB1234"),
    call("get_reservation", reservation_id="AB1234"),
    call("cancel_reservation", reservation_id="AB1234"),
]


@pytest.mark.parametrize(
    ("criterion", "messages", "passed", "says"),
    [
        (required_call("r", "", "cancel_reservation"), CANCEL, True, ""),
        (required_call("r", "", "send_confirmation"), CANCEL, False, "send_confirmation was never called"),
        (
            required_call("r", "", "cancel_reservation", args={"reservation_id": "XX0000"}),
            CANCEL,
            False,
            "wrong reservation_id",
        ),
        (
            required_call("r", "", "cancel_reservation"),
            [user("q"), call("cancel_reservation", "error")],
            False,
            "called but failed",
        ),
        (
            required_call("r", "", "cancel_reservation", after="get_reservation"),
            CANCEL,
            False,
            "not called after get_reservation",
        ),
        (required_call("r", "", "cancel_reservation", after="get_reservation"), LOOKUP_THEN_CANCEL, True, ""),
        (
            forbidden_call("f", "", "refund_payment", when="the reservation is non-refundable"),
            CANCEL,
            True,
            "",
        ),
        (
            forbidden_call("f", "", "cancel_reservation", when="the user declines"),
            CANCEL,
            False,
            "although the user declines",
        ),
        (order("o", "", "get_reservation", ["cancel_reservation"]), LOOKUP_THEN_CANCEL, True, ""),
        (
            order("o", "", "get_reservation", ["cancel_reservation"]),
            CANCEL,
            False,
            "without calling get_reservation",
        ),
        (
            order("o", "", "get_reservation", ["cancel_reservation"]),
            [
                user("q"),
                call("cancel_reservation", reservation_id="AB1234"),
                call("get_reservation", reservation_id="AB1234"),
            ],
            False,
            "cancel_reservation was called before get_reservation",
        ),
        (order("o", "", "get_reservation", ["refund_payment"]), CANCEL, True, ""),  # nothing to order
        (
            confirmed_before("c", "", "cancel_reservation"),
            CANCEL,
            False,
            "before the user explicitly confirmed",
        ),
        (
            confirmed_before("c", "", "cancel_reservation"),
            [user("q"), say("Sure?"), user("Yes, go ahead."), *CANCEL[1:]],
            True,
            "",
        ),
        (
            confirmed_before("c", "", "cancel_reservation"),
            [user("q"), say("Sure?"), user("No, leave it."), *CANCEL[1:]],
            False,
            "did not confirm",
        ),
        (confirmed_before("c", "", "cancel_reservation"), [user("q")], True, ""),
        (state("s", "", "reservations", "AB1234", "status", "cancelled"), CANCEL, True, ""),
        (
            state("s", "", "reservations", "AB1234", "status", "cancelled"),
            [user("q")],
            False,
            "status is 'active', expected 'cancelled'",
        ),
        (
            state("s", "", "customers", "C1000", "travel_credit", 300),
            [user("q")],
            False,
            "does not have the expected value",
        ),
    ],
)
def test_each_criterion_kind(
    criterion: RubricCriterion, messages: list[Message], passed: bool, says: str
) -> None:
    ok, feedback = result_of(criterion, messages)
    assert ok is passed
    if says:
        assert any(says in line for line in feedback), feedback
    else:
        assert feedback == []


def test_feedback_never_names_ids() -> None:
    criterion = state("s", "", "customers", "C1000", "email", "new@example.com")
    _, feedback = result_of(criterion, [user("q")])
    assert not any("C1000" in line or "@" in line for line in feedback)


def test_unknown_kind_and_broken_metadata_fail_with_a_reason() -> None:
    passed, feedback = result_of(RubricCriterion(name="x", metadata={"kind": "vibes"}), CANCEL)
    assert not passed
    assert feedback == [f"unknown criterion kind 'vibes'; known: {', '.join(CRITERION_KINDS)}"]
    passed, feedback = result_of(RubricCriterion(name="x", metadata={"kind": "state"}), CANCEL)
    assert not passed and "lacks" in feedback[0]


def test_score_is_weighted_and_pass_needs_every_required_criterion() -> None:
    heavy = required_call("heavy", "", "cancel_reservation", weight=3.0)
    optional = required_call("optional", "", "send_confirmation")
    optional.required = False
    case = make_case(heavy, optional)
    evaluation = grade(case, CANCEL, replay(case, CANCEL))
    assert evaluation.passed
    assert evaluation.score == pytest.approx(0.75)
    assert evaluation.feedback == ["optional: send_confirmation was never called"]
    failing = make_case(heavy, required_call("needed", "", "send_confirmation"))
    assert not grade(failing, CANCEL, replay(failing, CANCEL)).passed


def test_a_case_without_criteria_does_not_pass() -> None:
    case = make_case()
    assert not grade(case, CANCEL, replay(case, CANCEL)).passed


def test_replay_skips_failed_calls_and_leaves_the_seed_alone() -> None:
    case = make_case()
    db = replay(case, [user("q"), call("cancel_reservation", "error", reservation_id="AB1234")])
    assert db["reservations"]["AB1234"]["status"] == "active"
    db = replay(case, CANCEL)
    assert db["reservations"]["AB1234"]["status"] == "cancelled"
    assert DB["reservations"]["AB1234"]["status"] == "active"


async def test_rollout_evaluator_regrades_from_messages_alone() -> None:
    case = generate_dataset()[0][0]
    messages = [user(case.input["user_query"]), call("cancel_reservation", reservation_id="nonsense")]
    from_file = Rollout.model_validate_json(Rollout(case=case, messages=messages).model_dump_json())
    evaluation = await SampleEvaluator().evaluate(from_file)
    assert not evaluation.passed
    assert evaluation.metadata["criteria"] == len(case.rubric.criteria)


def test_affirmative_replies() -> None:
    assert all(is_affirmative(x) for x in ("Yes, please go ahead.", "Sure, do it.", "ok"))
    assert not any(is_affirmative(x) for x in ("No, leave it as it is.", "Not now", "yesterday I flew"))
