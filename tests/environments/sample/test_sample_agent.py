"""The scripted agent: naive mistakes without experiences, and behaviour that follows experiences."""

from __future__ import annotations

import pytest

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, Experience, ExperienceSet, PolicyStatus, Rollout
from ovtui.core.interfaces import RolloutExecutor
from ovtui.environments.sample import SampleAgentExecutor, SampleEvaluator
from ovtui.environments.sample.generate import generate_cases

NO_EXPERIENCE = ExperienceSet(root_uri="viking://user/default/memories/experiences")


def experience(name: str, content: str, status: PolicyStatus = PolicyStatus.DRAFT) -> Experience:
    return Experience(
        name=name,
        uri=f"viking://user/default/memories/experiences/{name}.md",
        version=1,
        status=status,
        content=content,
    )


def policy(*experiences: Experience) -> ExperienceSet:
    return ExperienceSet(root_uri=NO_EXPERIENCE.root_uri, policies=list(experiences))


def case_of(signature: str, variant: str, *, seed: int = 3) -> Case:
    cases = generate_cases("test", 30, seed)
    return next(c for c in cases if c.task_signature == signature and c.metadata["variant"] == variant)


def run(case: Case, policy_set: ExperienceSet = NO_EXPERIENCE) -> Rollout:
    return SampleAgentExecutor().execute_sync([case], policy_set, ExecutionContext("snap-1"))[0]


def failed(rollout: Rollout) -> set[str]:
    assert rollout.evaluation is not None
    return {r.criterion_name for r in rollout.evaluation.criterion_results if not r.passed}


CANCELLATION = """## Situation
- The customer wants to cancel a booking.
## Approach
- No successful approach recorded yet; follow the Reflect rules.
## Reflect
- ALWAYS call get_customer to verify the customer's identity before cancel_reservation
- ALWAYS call get_reservation to look the booking up before cancel_reservation
- ALWAYS ask for the user's explicit confirmation before cancel_reservation
- ALWAYS call send_confirmation after cancel_reservation
"""

REFUND = """## Situation
- The customer asks for their money back for a booking.
## Approach
- IF the reservation is refundable THEN get_reservation → refund_payment
- IF the reservation is non-refundable THEN get_reservation → issue_travel_credit
## Reflect
- No rules learned yet.
"""


@pytest.mark.parametrize(
    ("signature", "variant", "tools", "mistakes"),
    [
        (
            "booking_cancellation",
            "user_confirms",
            ["cancel_reservation"],
            {"verify_identity", "lookup_before_cancel", "explicit_confirmation", "confirmation_sent"},
        ),
        (
            "booking_cancellation",
            "user_declines",
            ["cancel_reservation"],
            {"respect_decline", "reservation_kept"},
        ),
        (
            "refund_request",
            "non_refundable",
            ["refund_payment"],
            {"no_refund_when_non_refundable", "credit_offered"},
        ),
        (
            "flight_change",
            "basic_economy",
            ["change_flight"],
            {"no_basic_economy_change", "fare_rules_checked"},
        ),
        ("delay_complaint", "compensation", ["issue_travel_credit"], {"no_self_compensation", "escalated"}),
        ("email_update", "single", ["update_contact_email"], {"verify_identity", "confirmation_sent"}),
    ],
)
def test_without_experiences_the_agent_makes_the_forbidden_mistakes(
    signature: str, variant: str, tools: list[str], mistakes: set[str]
) -> None:
    rollout = run(case_of(signature, variant))
    assert rollout.metadata["tools_used"] == tools
    assert mistakes <= failed(rollout)
    assert rollout.evaluation is not None and not rollout.evaluation.passed


def test_reflect_rules_change_what_it_does() -> None:
    case = case_of("booking_cancellation", "user_confirms")
    rollout = run(case, policy(experience("booking_cancellation", CANCELLATION)))
    assert rollout.metadata["tools_used"] == [
        "get_customer",
        "get_reservation",
        "cancel_reservation",
        "send_confirmation",
    ]
    assert rollout.metadata["experiences_used"] == ["booking_cancellation"]
    assert rollout.evaluation is not None
    assert rollout.evaluation.passed, rollout.evaluation.feedback
    question, answer = rollout.messages[3], rollout.messages[4]
    assert question.role == "assistant" and "confirm" in question.text
    assert answer.role == "user" and answer.text == case.input["simulated_user"]["reply"]


def test_a_declining_user_stops_a_gated_action() -> None:
    rollout = run(
        case_of("booking_cancellation", "user_declines"),
        policy(experience("booking_cancellation", CANCELLATION)),
    )
    assert "cancel_reservation" not in rollout.metadata["tools_used"]
    assert "respect_decline" not in failed(rollout)
    assert "not changed anything" in rollout.messages[-1].text


@pytest.mark.parametrize(
    ("variant", "action"), [("refundable", "refund_payment"), ("non_refundable", "issue_travel_credit")]
)
def test_it_follows_the_approach_sequence_for_the_situation(variant: str, action: str) -> None:
    case = case_of("refund_request", variant)
    rollout = run(case, policy(experience("refund_request", REFUND)))
    assert rollout.metadata["tools_used"] == ["get_reservation", action]
    assert rollout.evaluation is not None
    assert rollout.evaluation.passed, rollout.evaluation.feedback
    if action == "issue_travel_credit":  # the amount comes from the lookup, not from the case
        price = next(iter(case.input["db"]["reservations"].values()))["price"]
        assert rollout.messages[2].tool_parts[0].tool_input["amount"] == price


def test_the_same_experience_fixes_new_cases_with_other_ids_and_wordings() -> None:
    learned = policy(experience("refund_request", REFUND))
    cases = [c for c in generate_cases("train", 40, seed=99) if c.task_signature == "refund_request"]
    assert len({c.input["user_query"] for c in cases}) == len(cases) >= 6
    assert all(
        r.evaluation is not None and r.evaluation.passed
        for r in SampleAgentExecutor().execute_sync(cases, learned, ExecutionContext("x"))
    )


def test_experiences_for_other_requests_and_inactive_ones_are_ignored() -> None:
    case = case_of("refund_request", "non_refundable")
    seats = experience(
        "seat_selection",
        "## Situation\n- The customer wants a window seat on a booking.\n"
        "## Approach\n- get_reservation → issue_travel_credit\n## Reflect\n- NEVER call refund_payment",
    )
    retired = experience("refund_request", REFUND, status=PolicyStatus.DEPRECATED)
    rollout = run(case, policy(seats, retired))
    assert rollout.metadata["experiences_used"] == []
    assert rollout.metadata["tools_used"] == ["refund_payment"]


def test_general_etiquette_applies_to_every_request() -> None:
    etiquette = experience(
        "conversation_etiquette",
        "## Situation\n- Applies to every conversation with a customer.\n"
        "## Approach\n- Look the reservation up first\n## Reflect\n- No rules learned yet.",
    )
    rollout = run(case_of("flight_change", "changeable"), policy(etiquette))
    assert rollout.metadata["experiences_used"] == ["conversation_etiquette"]
    assert rollout.metadata["tools_used"] == ["get_reservation", "change_flight"]


async def test_rollout_contract() -> None:
    cases = generate_cases("test", 5, seed=1)
    executor = SampleAgentExecutor()
    assert isinstance(executor, RolloutExecutor)
    rollouts = await executor.execute(cases, NO_EXPERIENCE, ExecutionContext("policy-snapshot:abc"))
    assert [r.case.name for r in rollouts] == [c.name for c in cases]
    for rollout in rollouts:
        assert rollout.policy_snapshot_id == "policy-snapshot:abc"
        assert rollout.messages[0].role == "user" and rollout.messages[-1].role == "assistant"
        assert rollout.metadata["iterations"] == sum(m.role == "assistant" for m in rollout.messages)
        assert rollout.metadata["tools_used"] == [p.tool_name for m in rollout.messages for p in m.tool_parts]
        assert rollout.evaluation == SampleEvaluator().evaluate_sync(rollout)
