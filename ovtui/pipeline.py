"""OfflinePolicyOptimizationPipeline: train / eval / train_from_rollouts (seed 000 §8).

``eval`` never analyzes or writes, and fails on a rollout without evaluation. ``train`` runs a
baseline eval when given eval cases, then epochs of rollouts → trainer, then a final eval.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ovtui.components.case_loader import ListCaseLoader
from ovtui.context import ExecutionContext, PipelineContext
from ovtui.domain import ExperienceSet, Rollout, RolloutTrainingResult
from ovtui.errors import OvtuiError
from ovtui.events import EventBus
from ovtui.interfaces import PolicySnapshotter, PolicyTrainer, RolloutExecutor
from ovtui.reports import StageReport


class RunCancelled(OvtuiError):
    """The run was cancelled; everything applied so far is consistent and recorded."""


@dataclass
class PipelineEvaluationResult:
    report: StageReport
    rollouts: list[Rollout] = field(default_factory=list)


@dataclass
class PipelineResult:
    stages: list[StageReport] = field(default_factory=list)
    training: list[RolloutTrainingResult] = field(default_factory=list)
    policy_set: ExperienceSet | None = None


class OfflinePolicyOptimizationPipeline:
    def __init__(
        self,
        snapshotter: PolicySnapshotter,
        rollout_executor: RolloutExecutor,
        policy_trainer: PolicyTrainer,
        events: EventBus | None = None,
        cancel: asyncio.Event | None = None,
    ) -> None:
        self.snapshotter = snapshotter
        self.executor = rollout_executor
        self.trainer = policy_trainer
        self.events = events or EventBus()
        self.cancel = cancel or asyncio.Event()

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            raise RunCancelled("run cancelled")

    async def _rollouts(
        self, loader: ListCaseLoader, policy_set: ExperienceSet, stage: str, epoch: int
    ) -> list[Rollout]:
        total = len(loader)
        out: list[Rollout] = []
        self.events.progress(stage, 0, total, epoch=epoch)
        async for batch in loader.batches():
            self._check_cancel()
            snapshot = await self.snapshotter.snapshot(policy_set)
            context = ExecutionContext(policy_snapshot_id=snapshot, metadata={"epoch": epoch, "stage": stage})
            out.extend(await self.executor.execute(batch, policy_set, context))
            self.events.progress(stage, len(out), total, epoch=epoch)
        return out

    async def eval(
        self, loader: ListCaseLoader, policy_set: ExperienceSet, *, stage: str = "eval", epoch: int = -1
    ) -> PipelineEvaluationResult:
        rollouts = await self._rollouts(loader, policy_set, stage, epoch)
        missing = [r.case.name for r in rollouts if r.evaluation is None]
        if missing:
            raise OvtuiError(f"eval needs graded rollouts; no evaluation for: {', '.join(missing[:5])}")
        report = summarise(stage, epoch, rollouts)
        self.events.emit("eval", **report.model_dump(), accuracy=report.accuracy)
        return PipelineEvaluationResult(report=report, rollouts=rollouts)

    async def train(
        self,
        train_loader: ListCaseLoader,
        policy_set: ExperienceSet,
        context: PipelineContext,
        eval_loader: ListCaseLoader | None = None,
    ) -> PipelineResult:
        result = PipelineResult(policy_set=policy_set)
        if eval_loader is not None:
            result.stages.append((await self.eval(eval_loader, policy_set, stage="baseline_eval")).report)
        for epoch in range(context.max_epochs):
            self._check_cancel()
            rollouts_seen: list[Rollout] = []
            commits = errors = 0
            async for batch in train_loader.batches():
                self._check_cancel()
                snapshot = await self.snapshotter.snapshot(policy_set)
                exec_ctx = ExecutionContext(
                    policy_snapshot_id=snapshot, metadata={"epoch": epoch, "training": True}
                )
                rollouts = await self.executor.execute(batch, policy_set, exec_ctx)
                rollouts_seen.extend(rollouts)
                self.events.progress("train_rollouts", len(rollouts_seen), len(train_loader), epoch=epoch)
                training = await self.trainer.train_rollouts(rollouts, policy_set, context)
                result.training.append(training)
                errors += len(training.errors)
                if training.apply_result is not None:
                    commits += len(rollouts)
                    policy_set = training.apply_result.updated_policy_set
                else:
                    policy_set = await policy_set.reload()
            stage = summarise("train_epoch", epoch, rollouts_seen, commits=commits, errors=errors)
            result.stages.append(stage)
            self.events.emit("eval", **stage.model_dump(), accuracy=stage.accuracy)
        result.policy_set = policy_set
        if eval_loader is not None:
            self._check_cancel()
            final = await self.eval(eval_loader, policy_set, stage="final_eval", epoch=context.max_epochs)
            result.stages.append(final.report)
        return result

    async def train_from_rollouts(
        self, rollouts: list[Rollout], policy_set: ExperienceSet, context: PipelineContext
    ) -> RolloutTrainingResult:
        missing_case = [i for i, r in enumerate(rollouts) if r.case is None]
        if missing_case:
            raise OvtuiError(f"every rollout needs a case; missing at {missing_case}")
        return await self.trainer.train_rollouts(rollouts, policy_set, context)


def summarise(
    stage: str, epoch: int, rollouts: list[Rollout], *, commits: int | None = None, errors: int | None = None
) -> StageReport:
    graded = [r for r in rollouts if r.evaluation is not None]
    passed = sum(1 for r in graded if r.evaluation and r.evaluation.passed)
    reward = sum(r.evaluation.score for r in graded if r.evaluation) / len(graded) if graded else 0.0
    return StageReport(
        stage=stage,
        epoch=epoch,
        cases=len(rollouts),
        passed=passed,
        avg_reward=reward,
        commits=commits,
        errors=errors,
        failed_cases=[r.case.name for r in graded if r.evaluation and not r.evaluation.passed],
    )
