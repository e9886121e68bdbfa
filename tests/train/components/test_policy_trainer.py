"""Streaming batching: flush on count, on age and on close; each submitter gets its own batch."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ovtui.core.domain import (
    Case,
    ExperienceSet,
    PatchSemanticGradient,
    PolicyUpdatePlan,
    Rollout,
    RolloutAnalysis,
    Rubric,
    RubricEvaluation,
)
from ovtui.core.events import Event, EventBus
from ovtui.core.fileformat import MemoryFile
from ovtui.core.interfaces import ApplyOutcome, EstimateOutcome
from ovtui.memory.store import MemoryStore
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.policy_trainer import StreamingPolicyTrainer, StreamingPolicyTrainerConfig


class RecordingEngine:
    """Stands in for the engine's two halves so only the batching is under test."""

    def __init__(self, gradients_per_rollout: int = 1) -> None:
        self.per_rollout = gradients_per_rollout
        self.batches: list[list[str]] = []
        self.seen: list[Event] = []
        self.events = EventBus([self.seen.append])

    @property
    def flushes(self) -> list[str]:
        """Why each batch was flushed, from the trainer's ``batch_flushed`` events."""
        return [e.data["reason"] for e in self.seen if e.kind == "batch_flushed"]

    async def analyze_and_estimate(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> EstimateOutcome:
        rollout = rollouts[0]
        analysis = RolloutAnalysis(rollout=rollout, evaluation=RubricEvaluation(passed=True, score=1.0))
        gradients = [
            PatchSemanticGradient(
                before_file=None,
                after_file=MemoryFile(
                    content=rollout.case.name, fields={"experience_name": f"{rollout.case.name}_{i}"}
                ),
                base_version=None,
                metadata={"case": rollout.case.name},
            )
            for i in range(self.per_rollout)
        ]
        return EstimateOutcome(analyses=[analysis], gradients=gradients)

    async def plan_and_apply(
        self,
        gradients: list[PatchSemanticGradient],
        policy_set: ExperienceSet,
        *,
        analyses: list[RolloutAnalysis] | None = None,
        replan: bool = True,
    ) -> ApplyOutcome:
        self.batches.append([g.metadata["case"] for g in gradients])
        return ApplyOutcome(plan=PolicyUpdatePlan(metadata={"plan_id": f"batch{len(self.batches)}"}))


def _rollout(name: str) -> Rollout:
    return Rollout(case=Case(name=name, task_signature=name, rubric=Rubric(name=name)))


def _policy_set(tmp_path: Path) -> ExperienceSet:
    return ExperienceSetLoader(MemoryStore.open(tmp_path)).load_sync()


async def test_flush_on_count_gives_each_submitter_its_batch(tmp_path: Path) -> None:
    engine = RecordingEngine()
    trainer = StreamingPolicyTrainer(
        engine,
        _policy_set(tmp_path),
        StreamingPolicyTrainerConfig(max_gradients_per_update=2, max_wait_seconds=60),
    )
    results = await asyncio.gather(*(trainer.submit_rollout(_rollout(f"c{i}")) for i in range(4)))
    await trainer.close()
    assert engine.flushes == ["count", "count"]
    assert sorted(sorted(b) for b in engine.batches) == [["c0", "c1"], ["c2", "c3"]]
    for i, result in enumerate(results):
        batch = next(b for b in engine.batches if f"c{i}" in b)
        assert result.plan.metadata["plan_id"] == f"batch{engine.batches.index(batch) + 1}"
        assert result.metadata["flush"] == "count"
        assert [a.rollout.case.name for a in result.analyses] == [f"c{i}"]


async def test_flush_on_age(tmp_path: Path) -> None:
    engine = RecordingEngine()
    trainer = StreamingPolicyTrainer(
        engine,
        _policy_set(tmp_path),
        StreamingPolicyTrainerConfig(max_gradients_per_update=100, max_wait_seconds=0.05),
    )
    result = await trainer.submit_rollout(_rollout("lonely"))  # resolves only when the age flush fires
    await trainer.close()
    assert engine.flushes == ["age"]
    assert result.metadata["flush"] == "age" and engine.batches == [["lonely"]]


async def test_flush_on_close(tmp_path: Path) -> None:
    engine = RecordingEngine()
    trainer = StreamingPolicyTrainer(
        engine,
        _policy_set(tmp_path),
        StreamingPolicyTrainerConfig(max_gradients_per_update=100, max_wait_seconds=3600),
    )
    waiting = [asyncio.create_task(trainer.submit_rollout(_rollout(f"c{i}"))) for i in range(3)]
    while sum(len(s.gradients) for s in trainer._queue) < 3:  # wait until all three are queued
        await asyncio.sleep(0)
    assert not any(t.done() for t in waiting)
    await trainer.close()
    results = await asyncio.gather(*waiting)
    assert engine.flushes == ["close"]
    assert {r.metadata["flush"] for r in results} == {"close"}
    assert sorted(engine.batches[0]) == ["c0", "c1", "c2"]


async def test_rollout_without_gradients_returns_at_once(tmp_path: Path) -> None:
    engine = RecordingEngine(gradients_per_rollout=0)
    trainer = StreamingPolicyTrainer(engine, _policy_set(tmp_path))
    result = await trainer.submit_rollout(_rollout("nothing"))
    await trainer.close()
    assert result.gradients == [] and engine.batches == [] and engine.flushes == []
