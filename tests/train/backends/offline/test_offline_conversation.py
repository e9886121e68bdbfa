"""The offline learner on conversation cases (a session commit's): the calls that answered a kind of
request, and what the agent did after a failed call — learned from the trajectory and the criteria's
kinds and pass/fail, never from the grader's wording, with none of the user's values."""

from __future__ import annotations

from typing import Any

import pytest

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import (
    Case,
    CriterionResult,
    Experience,
    ExperienceSet,
    Message,
    PatchSemanticGradient,
    PolicyStatus,
    Rollout,
    RolloutAnalysis,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    TextPart,
    ToolPart,
)
from ovtui.core.fileformat import MemoryFile
from ovtui.environments.sample import SampleAgentExecutor
from ovtui.environments.sample.generate import generate_cases
from ovtui.plugins.session_extraction import ANSWERS_AFTER_TOOLS, TOOL_CALLS_COMPLETE
from ovtui.plugins.wording.lessons import Lesson, parse_lesson
from ovtui.plugins.wording.sections import parse_sections
from ovtui.plugins.wording.text import error_kind
from ovtui.train.backends.offline import OfflineGradientProposer, OfflinePlanMerger
from ovtui.train.backends.offline.conversation import error_lessons, is_conversation

ROOT = "viking://user/default/memories/experiences"
GRADER_WORDS = "THE GRADER SAYS"


def call(tool: str, args: dict[str, Any], output: str, status: str = "completed") -> Message:
    part = ToolPart(tool_id=tool, tool_name=tool, tool_input=args, tool_output=output, tool_status=status)
    return Message(role="assistant", parts=[part])


def said(role: str, text: str) -> Message:
    return Message(role=role, parts=[TextPart(text=text)])


def conversation_case() -> Case:
    criteria = [
        RubricCriterion(name="tools_succeed", metadata={"kind": TOOL_CALLS_COMPLETE}),
        RubricCriterion(name="answers_user", required=False, metadata={"kind": ANSWERS_AFTER_TOOLS}),
    ]
    return Case(
        name="change_email_customer_s1_archive_001",
        task_signature="change_email_customer",
        input={"user_query": "x"},
        rubric=Rubric(name="change_email_customer_rubric", criteria=criteria),
    )


def analysis(messages: list[Message], tools_ok: bool, answered: bool = True) -> RolloutAnalysis:
    results = [
        CriterionResult(
            criterion_name="tools_succeed", passed=tools_ok, score=float(tools_ok), feedback=[GRADER_WORDS]
        ),
        CriterionResult(
            criterion_name="answers_user", passed=answered, score=float(answered), feedback=[GRADER_WORDS]
        ),
    ]
    evaluation = RubricEvaluation(passed=tools_ok, score=0.5, criterion_results=results)
    rollout = Rollout(
        case=conversation_case(), messages=messages, policy_snapshot_id="p", evaluation=evaluation
    )
    return RolloutAnalysis(rollout=rollout, evaluation=evaluation)


def request(customer: str, email: str) -> Message:
    return said("user", f"Hi, I'm Ana. Please change the email of customer {customer} to {email}.")


def success(customer: str, email: str) -> list[Message]:
    return [
        request(customer, email),
        call("update_email", {"customer_id": customer, "email": email}, f'{{"email": "{email}"}}'),
        said("assistant", f"Done: {email}."),
    ]


def test_one_successful_call_is_the_approach_with_argument_names_only() -> None:
    proposal = OfflineGradientProposer().proposal(analysis(success("C-4821", "ana@example.com"), True), [])
    assert proposal is not None and proposal.experience_name == "change_email_customer"
    sections = parse_sections(proposal.content)
    assert sections.approach == [
        '- For a request like "change email customer": update_email(customer_id, email) answered it'
    ]
    for value in ("C-4821", "4821", "ana@example.com", "Ana", GRADER_WORDS):
        assert value not in proposal.content
    # the example is the task: who asked (their introduction) and their values are left out
    assert '"Please change the email of customer <value> to <value>."' in proposal.content


def test_the_answered_lesson_reads_back_as_written() -> None:
    lesson = Lesson(
        "answered", ("get_order", "cancel_order"), detail=("cancel order", "order_id", "order_id, reason")
    )
    line = lesson.with_facts({"order.status": "pending"}).render()
    assert line == (
        'For a request like "cancel order": get_order(order_id) → cancel_order(order_id, reason) answered it'
        " when the order's status is pending"
    )
    assert parse_lesson(f"- {line}") == lesson.with_facts({"order.status": "pending"})
    failed = Lesson("on_error", ("getOrder",), detail=("", "asked the user"))
    assert parse_lesson(failed.render()) == failed


@pytest.mark.parametrize(
    ("after", "then"),
    [
        (
            [call("find_customer", {"email": "a@b.org"}, '{"id": "C-1"}')],
            "called find_customer(email), which succeeded",
        ),
        (
            [call("update_email", {"customer_id": "C-2", "email": "a@b.org"}, "Error: locked", "error")],
            "called update_email(customer_id, email) again, which failed too",
        ),
        ([said("assistant", "Which customer?"), said("user", "C-1001")], "asked the user"),
        ([said("assistant", "Sorry, I could not.")], "replied without another tool call"),
        ([], "stopped without a reply"),
    ],
)
def test_a_failed_call_teaches_its_error_kind_and_what_came_next(after: list[Message], then: str) -> None:
    failed = call(
        "update_email",
        {"customer_id": "C-4821", "email": "ana@example.com"},
        "Error: customer C-4821 not found for ana@example.com",
        "error",
    )
    messages = [request("C-4821", "ana@example.com"), failed, *after]
    assert error_lessons(messages)[0] == Lesson(
        "on_error", ("update_email",), detail=("customer not found", then)
    )
    proposal = OfflineGradientProposer().proposal(analysis(messages, False), [])
    assert proposal is not None
    reflect = parse_sections(proposal.content).reflect
    assert f'- When update_email failed with "customer not found", the agent then {then}' in reflect
    assert parse_sections(proposal.content).approach == []  # a failed conversation shows no approach
    for value in ("C-4821", "ana@example.com", GRADER_WORDS):
        assert value not in proposal.content


def test_error_kinds_name_the_error_not_the_values() -> None:
    assert error_kind('{"error": {"code": "rate_limited", "message": "slow down, Ana"}}') == "rate limited"
    assert error_kind("Error: no account for Ana Ruiz (ana@example.com)", ["Ana Ruiz"]) == "no account"
    assert error_kind("Timeout") == "timeout"
    assert error_kind("C-1001 99") == ""


def test_three_sessions_of_one_kind_merge_into_one_lesson() -> None:
    proposer = OfflineGradientProposer()
    gradients = []
    for customer, email in [("C-1", "a@x.org"), ("C-2", "b@y.com"), ("C-3", "c@z.net")]:
        proposal = proposer.proposal(analysis(success(customer, email), True), [])
        assert proposal is not None
        after = MemoryFile(
            uri=f"{ROOT}/{proposal.experience_name}.md",
            content=proposal.content,
            fields={"experience_name": proposal.experience_name},
        )
        gradients.append(PatchSemanticGradient(before_file=None, after_file=after, base_version=None))
    [decision] = OfflinePlanMerger().decisions(gradients, ExperienceSet(root_uri=ROOT), [])
    assert decision.experience_name == "change_email_customer" and decision.source_gradients == [0, 1, 2]
    assert decision.content is not None
    assert len(parse_sections(decision.content).approach) == 1
    # and once that experience exists, the same lesson again proposes nothing
    existing = Experience(
        name="change_email_customer",
        uri=f"{ROOT}/change_email_customer.md",
        version=1,
        status=PolicyStatus.DRAFT,
        content=decision.content,
    )
    assert proposer.proposal(analysis(success("C-9", "z@q.org"), True), [existing]) is None


def test_sample_rollouts_are_no_conversations_and_learn_as_before() -> None:
    [case] = [c for c in generate_cases("train", 20, 8) if c.task_signature == "email_update"][:1]
    assert not is_conversation(case)
    rollout = SampleAgentExecutor().execute_sync([case], ExperienceSet(root_uri=ROOT), ExecutionContext("p"))[
        0
    ]
    assert rollout.evaluation is not None
    proposal = OfflineGradientProposer().proposal(
        RolloutAnalysis(rollout=rollout, evaluation=rollout.evaluation), []
    )
    content = proposal.content if proposal is not None else ""
    assert "answered it" not in content and "the agent then" not in content


def test_a_fact_that_is_a_users_value_does_not_condition_the_lesson() -> None:
    messages = [
        said("user", "Please cancel order 88 for alice"),
        call("get_order", {"order_id": "88"}, '{"status": "pending", "holder": "alice", "paid": true}'),
        call("cancel_order", {"order_id": "88"}, "cancelled"),
        said("assistant", "Cancelled."),
    ]
    proposal = OfflineGradientProposer().proposal(analysis(messages, True), [])
    assert proposal is not None
    [line] = parse_sections(proposal.content).approach
    assert "get_order(order_id) → cancel_order(order_id) answered it when" in line
    assert "the order's status is pending" in line and "the order is paid" in line
    assert "alice" not in proposal.content


def test_calls_without_a_reply_after_them_teach_replying_not_an_approach() -> None:
    messages = success("C-4821", "ana@example.com")[:2]  # the last call, and then nothing
    proposal = OfflineGradientProposer().proposal(analysis(messages, True, answered=False), [])
    assert proposal is not None
    sections = parse_sections(proposal.content)
    assert sections.reflect == ["- ALWAYS reply to the user after update_email"]
    assert sections.approach == []  # nothing was answered, so no "answered it"
    assert parse_lesson(sections.reflect[0]) == Lesson("reply", ("update_email",))
