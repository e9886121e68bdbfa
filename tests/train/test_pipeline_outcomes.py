"""A run links each graded rollout to the experiences its agent used: the model's agent records a
use per experience in its prompt, by the rollout, and the pipeline records the rollout's outcome
once it is graded (its grade in an eval; in training, the trajectory its analysis wrote)."""

from __future__ import annotations

from ovtui.core.domain import (
    Case,
    Rollout,
    RolloutAnalysis,
    RolloutTrainingResult,
    Rubric,
    RubricEvaluation,
    Trajectory,
)
from ovtui.llm.client import LLMClient
from ovtui.memory.hotness import HotnessMix
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import ROLLOUT_ID
from ovtui.memory.store import MemoryStore
from ovtui.testing.openai_server import FakeOpenAIServer, RecordedRequest, Reply
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.graded_executor import GradedRolloutExecutor
from ovtui.train.components.rollout_executor import SingleTurnLLMRolloutExecutor
from ovtui.train.components.snapshotter import ContentHashPolicySnapshotter
from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline

pytest_plugins = ["ovtui.testing.fixtures"]  # the `fake` server and `client` fixtures

EXP = "viking://user/default/memories/experiences"


def case(name: str, query: str) -> Case:
    return Case(name=name, task_signature=name, input={"user_query": query}, rubric=Rubric(name=name))


class ConfirmEvaluator:
    def can_grade(self, case: Case) -> bool:
        return True

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation:
        passed = "confirm" in rollout.messages[-1].text.lower()
        return RubricEvaluation(passed=passed, score=float(passed))


class OneTrajectoryEach:
    """A trainer that analyses each rollout into one trajectory (as the engine does) and plans nothing."""

    async def train_rollouts(self, rollouts: list[Rollout], policy_set: object) -> RolloutTrainingResult:
        analyses = [
            RolloutAnalysis(
                rollout=r,
                evaluation=r.evaluation or RubricEvaluation(passed=False, score=0.0),
                trajectories=[
                    Trajectory(
                        name=r.case.name, uri=f"viking://t/{r.case.name}.md", content="", outcome="partial"
                    )
                ],
            )
            for r in rollouts
        ]
        return RolloutTrainingResult(analyses=analyses)


async def test_eval_and_training_link_each_rollout_s_outcome_to_what_it_used(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    def reply(request: RecordedRequest) -> Reply:
        return Reply.text(
            "Please confirm." if "cancel" in request.messages[-1]["content"] else "Here you go."
        )

    fake.respond_with(reply)
    ledger = UseLedger(store.paths)
    agent = SingleTurnLLMRolloutExecutor(client, max_experiences=2, hotness=HotnessMix(ledger))
    loader = ExperienceSetLoader(store)
    pipeline = OfflinePolicyOptimizationPipeline(
        ContentHashPolicySnapshotter(),
        GradedRolloutExecutor(agent, ConfirmEvaluator()),
        OneTrajectoryEach(),  # type: ignore[arg-type]
        loader,
        ledger=ledger,
    )
    cases = ListCaseLoader([case("c1", "I want to cancel my booking"), case("c2", "Where is my refund?")])
    evaluation = await pipeline.eval(cases, await loader.load())
    assert all(ROLLOUT_ID in r.metadata for r in evaluation.rollouts)
    cancel, refund = (
        ledger.usage_of(f"{EXP}/reservation_cancellation.md"),
        ledger.usage_of(f"{EXP}/refund_status.md"),
    )
    assert cancel is not None and (cancel.count, cancel.outcomes) == (1, (1, 0, 0, 0, 0))
    assert refund is not None and (refund.count, refund.outcomes) == (1, (0, 1, 0, 0, 0))

    await pipeline.train(ListCaseLoader([case("c3", "cancel it please")]), await loader.load())
    cancel = ledger.usage_of(f"{EXP}/reservation_cancellation.md")
    assert cancel is not None and cancel.count == 2 and cancel.outcomes == (1, 0, 1, 0, 0)
    assert [f.trajectory for f in ledger.fed(f"{EXP}/reservation_cancellation.md")] == [
        "viking://t/c3.md",
        None,
    ]
    with ledger._state() as state:
        assert state.consumers == {}  # every rollout graded: none waits for an outcome
