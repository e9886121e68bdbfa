"""OfflinePolicyOptimizationPipeline with fake stages (ovtui.testing.fakes): eval, the stages of a
train run, what reaches the trainer, which policy set each batch runs under, and cancellation."""

from __future__ import annotations

import pytest

from ovtui.core.context import RunContext
from ovtui.core.errors import OvtuiError, RunCancelled
from ovtui.core.events import Event, EventBus
from ovtui.testing.fakes import (
    HashSnapshotter,
    InMemoryPolicies,
    PassingEvaluator,
    RecordingTrainer,
    ScriptedExecutor,
    case,
)
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline


class Harness:
    def __init__(
        self,
        *,
        passing: set[str],
        trainer: RecordingTrainer | None = None,
        errors: dict[str, str] | None = None,
        graded: bool = True,
    ) -> None:
        self.policies = InMemoryPolicies({"refund": "- look the order up"})
        self.executor = ScriptedExecutor(PassingEvaluator(passing) if graded else None, errors)
        self.trainer = trainer
        self.seen: list[Event] = []
        self.run = RunContext(run_id="run1", events=EventBus([self.seen.append]))
        self.pipeline = OfflinePolicyOptimizationPipeline(
            HashSnapshotter(), self.executor, trainer, self.policies, run=self.run
        )

    def kinds(self, kind: str) -> list[Event]:
        return [e for e in self.seen if e.kind == kind]


def cases(*names: str) -> ListCaseLoader:
    return ListCaseLoader([case(n) for n in names], batch_size=2)


async def test_eval_runs_every_batch_and_reports_what_passed() -> None:
    harness = Harness(passing={"a", "c"})
    result = await harness.pipeline.eval(cases("a", "b", "c"), harness.policies.snapshot())
    assert [b.cases for b in harness.executor.batches] == [["a", "b"], ["c"]]
    report = result.report
    assert (report.stage, report.cases, report.passed, report.failed_cases) == ("eval", 3, 2, ["b"])
    assert report.results == {"a": [1], "b": [0], "c": [1]}
    assert [(e.data["done"], e.data["total"]) for e in harness.kinds("progress")] == [(0, 3), (2, 3), (3, 3)]
    [event] = harness.kinds("eval")
    assert event.data["passed"] == 2 and event.data["accuracy"] == pytest.approx(2 / 3)


async def test_eval_refuses_ungraded_rollouts() -> None:
    harness = Harness(passing=set(), graded=False)
    with pytest.raises(OvtuiError, match="eval needs graded rollouts; no evaluation for: a, b"):
        await harness.pipeline.eval(cases("a", "b"), harness.policies.snapshot())


async def test_each_batch_is_executed_under_its_snapshot_and_stage() -> None:
    harness = Harness(passing={"a"}, trainer=RecordingTrainer())
    await harness.pipeline.train(cases("a", "b"), harness.policies.snapshot(), epochs=2)
    contexts = [b.context for b in harness.executor.batches]
    assert [(c.stage, c.epoch, c.run_id) for c in contexts] == [
        ("train_rollouts", 0, "run1"),
        ("train_rollouts", 1, "run1"),
    ]
    expected = await HashSnapshotter().snapshot(harness.policies.snapshot())
    assert {c.policy_snapshot_id for c in contexts} == {expected}
    assert all(c.cancel is harness.run.cancel for c in contexts)


async def test_train_runs_baseline_epochs_and_final_eval_in_order() -> None:
    trainer = RecordingTrainer()
    harness = Harness(passing={"a"}, trainer=trainer)
    result = await harness.pipeline.train(
        cases("a", "b", "c"), harness.policies.snapshot(), epochs=2, eval_cases=cases("a", "b")
    )
    assert [(s.stage, s.epoch) for s in result.stages] == [
        ("baseline_eval", -1),
        ("train_epoch", 0),
        ("train_epoch", 1),
        ("final_eval", 2),
    ]
    assert [b.cases for b in trainer.batches] == [["a", "b"], ["c"], ["a", "b"], ["c"]]
    assert [s.commits for s in result.stages[1:3]] == [0, 0]  # the trainer applied nothing


async def test_what_a_trainer_applied_is_the_set_the_next_batch_runs_under() -> None:
    policies = InMemoryPolicies()
    trainer = RecordingTrainer(learn=policies)
    harness = Harness(passing={"a"}, trainer=trainer)
    result = await harness.pipeline.train(cases("a", "b", "c"), harness.policies.snapshot())
    first, second = harness.executor.batches
    assert "learned" not in first.policy_set.by_name()
    assert second.policy_set.by_name()["learned"].content == "- from a\n- from b"
    assert trainer.batches[1].policy_set is second.policy_set
    assert result.stages[0].commits == 3
    assert result.policy_set is not None and result.policy_set.by_name()["learned"].version == 2


async def test_without_an_apply_the_policy_set_is_reloaded_between_batches() -> None:
    harness = Harness(passing={"a"}, trainer=RecordingTrainer())
    harness.policies.write("refund", "- changed by the person meanwhile")
    await harness.pipeline.train(cases("a", "b", "c"), InMemoryPolicies().snapshot())
    assert harness.policies.loads == 2  # after each batch
    assert "refund" not in harness.executor.batches[0].policy_set.by_name()
    assert harness.executor.batches[1].policy_set.by_name()["refund"].version == 2


async def test_a_failed_execution_is_reported_and_never_trained_on() -> None:
    trainer = RecordingTrainer(errors=["one plan failed"])
    harness = Harness(passing={"a"}, trainer=trainer, errors={"b": "service down"})
    result = await harness.pipeline.train(cases("a", "b"), harness.policies.snapshot())
    assert [b.cases for b in trainer.batches] == [["a"]]
    assert result.training[0].errors == ["b: service down", "one plan failed"]
    assert result.stages[0].errors == 2 and result.stages[0].failed_cases == ["b"]
    warnings = [e.data["message"] for e in harness.kinds("log") if e.data["level"] == "warning"]
    assert warnings == ["not trained on b: service down"]


async def test_a_batch_that_failed_entirely_reaches_no_trainer() -> None:
    trainer = RecordingTrainer()
    harness = Harness(passing=set(), trainer=trainer, errors={"a": "down", "b": "down"})
    result = await harness.pipeline.train(cases("a", "b"), harness.policies.snapshot())
    assert trainer.batches == []
    assert result.training[0].errors == ["a: down", "b: down"]


async def test_a_cancelled_run_stops_before_its_next_batch() -> None:
    harness = Harness(passing={"a"}, trainer=RecordingTrainer())
    harness.run.events.listeners.append(
        lambda e: harness.run.cancel.set() if e.kind == "progress" and e.data["done"] == 2 else None
    )
    with pytest.raises(RunCancelled):
        await harness.pipeline.train(cases("a", "b", "c"), harness.policies.snapshot())
    assert [b.cases for b in harness.executor.batches] == [["a", "b"]]


async def test_an_eval_only_pipeline_refuses_to_train() -> None:
    harness = Harness(passing={"a"})
    with pytest.raises(OvtuiError, match="built for eval only"):
        await harness.pipeline.train_from_rollouts([], harness.policies.snapshot())
