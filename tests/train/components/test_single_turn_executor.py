"""SingleTurnLLMRolloutExecutor: one chat call per case, relevant experiences in the system prompt."""

from __future__ import annotations

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, PolicyStatus, Rollout, Rubric, RubricEvaluation
from ovtui.core.rollouts import user_query
from ovtui.llm.client import LLMClient
from ovtui.memory.store import MemoryStore
from ovtui.testing.openai_server import FakeOpenAIServer, RecordedRequest, Reply
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.graded_executor import GradedRolloutExecutor
from ovtui.train.components.rollout_executor import SingleTurnLLMRolloutExecutor

pytest_plugins = ["ovtui.testing.fixtures"]  # the `fake` server and `client` fixtures


def case(name: str, query: str) -> Case:
    return Case(name=name, task_signature=name, input={"user_query": query}, rubric=Rubric(name=name))


class ConfirmEvaluator:
    def can_grade(self, case: Case) -> bool:
        return case.name != "ungradable"

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation:
        passed = "confirm" in rollout.messages[-1].text.lower()
        return RubricEvaluation(passed=passed, score=float(passed))


async def test_one_call_per_case_with_relevant_experiences(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    policy = ExperienceSetLoader(store).load_sync()
    policy.by_name()["address_change"].status = PolicyStatus.ARCHIVED

    def reply(request: RecordedRequest) -> Reply:
        query = request.messages[-1]["content"]
        return Reply.text("Please confirm the cancellation." if "cancel" in query else "Here is your refund.")

    fake.respond_with(reply)
    agent = SingleTurnLLMRolloutExecutor(client, max_experiences=2)
    executor = GradedRolloutExecutor(agent, ConfirmEvaluator())
    cases = [case("c1", "I want to cancel my booking"), case("c2", "Where is my refund?")]
    rollouts = await executor.execute(cases, policy, ExecutionContext(policy_snapshot_id="snap-1"))

    assert [r.case.name for r in rollouts] == ["c1", "c2"]
    first = rollouts[0]
    assert [(m.role, m.text) for m in first.messages] == [
        ("user", "I want to cancel my booking"),
        ("assistant", "Please confirm the cancellation."),
    ]
    assert first.policy_snapshot_id == "snap-1"
    assert first.evaluation == RubricEvaluation(passed=True, score=1.0)
    assert rollouts[1].evaluation is not None and not rollouts[1].evaluation.passed
    # Only experiences that match the request go into the prompt (refund_status does not).
    assert first.metadata["experiences"] == ["reservation_cancellation"]
    assert rollouts[1].metadata["experiences"] == ["refund_status"]
    assert len(fake.chat_requests) == 2
    systems = {r.messages[-1]["content"]: r.messages[0]["content"] for r in fake.chat_requests}
    cancel_system = systems["I want to cancel my booking"]
    assert "### reservation_cancellation\n## Situation\n- Customer asks to cancel a booking" in cancel_system
    assert "address_change" not in cancel_system  # archived experiences are left out
    assert "response_format" not in fake.chat_requests[0].body
    assert client.usage.stage("rollout").calls == 2


async def test_a_case_the_environment_cannot_grade_stays_ungraded(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.respond_with(lambda request: Reply.text("Please confirm."))
    empty = ExperienceSetLoader(store).load_sync().model_copy(update={"policies": []})
    executor = GradedRolloutExecutor(SingleTurnLLMRolloutExecutor(client), ConfirmEvaluator())
    graded, ungraded = await executor.execute(
        [case("c", "hello"), case("ungradable", "hello")], empty, ExecutionContext(policy_snapshot_id="s")
    )
    assert graded.evaluation == RubricEvaluation(passed=True, score=1.0)
    assert ungraded.evaluation is None


async def test_without_evaluator_and_with_a_refusal(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(Reply.refused("I cannot do that."))
    empty = ExperienceSetLoader(store).load_sync().model_copy(update={"policies": []})
    [rollout] = await SingleTurnLLMRolloutExecutor(client).execute(
        [case("c", "hello")], empty, ExecutionContext(policy_snapshot_id="s")
    )
    assert rollout.evaluation is None
    assert rollout.messages[-1].text == "I cannot do that."  # the agent's answer, graded like any other
    assert (
        fake.chat_requests[0].messages[0]["content"].startswith("You are a helpful customer-support agent.")
    )
    assert "experiences learned" not in fake.chat_requests[0].messages[0]["content"]


def test_user_query_falls_back_to_the_input() -> None:
    assert user_query(case("c", "q")) == "q"
    assert (
        user_query(Case(name="c", task_signature="t", input={"question": "why?"}, rubric=Rubric(name="r")))
        == "why?"
    )
    assert (
        user_query(Case(name="c", task_signature="t", input={"a": 1}, rubric=Rubric(name="r"))) == '{"a": 1}'
    )
    assert user_query(Case(name="c", task_signature="t", rubric=Rubric(name="r"))) == "t"
