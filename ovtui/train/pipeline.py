"""OfflinePolicyOptimizationPipeline: train / eval / train_from_rollouts.

``eval`` never analyzes or writes, and fails on a rollout without evaluation. ``train`` runs a
baseline eval when given eval cases, then epochs of rollouts → trainer, then a final eval.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ovtui.core.context import ExecutionContext, RunContext
from ovtui.core.domain import (
    EXECUTION_ERROR,
    Case,
    ExperienceSet,
    Rollout,
    RolloutAnalysis,
    RolloutTrainingResult,
)
from ovtui.core.errors import OvtuiError
from ovtui.core.interfaces import (
    CaseLoader,
    PolicySetLoader,
    PolicySnapshotter,
    PolicyTrainer,
    RolloutExecutor,
)
from ovtui.core.rollouts import outcome_line
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import rollout_outcomes
from ovtui.train.adherence.recorder import AdherenceRecorder
from ovtui.train.reports import StageReport


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
    """One run's pipeline: its stages by Protocol, and the run (id, events, cancellation)."""

    def __init__(
        self,
        snapshotter: PolicySnapshotter,
        rollout_executor: RolloutExecutor,
        policy_trainer: PolicyTrainer | None,
        loader: PolicySetLoader,
        run: RunContext | None = None,
        ledger: UseLedger | None = None,
        *,
        adherence: AdherenceRecorder | None = None,
    ) -> None:
        """``policy_trainer`` None: an eval-only pipeline (eval never trains). ``ledger``: where
        the outcome of each graded rollout whose agent recorded its uses is linked to them;
        ``adherence``: where each rollout's experiences are checked against what it did."""
        self.snapshotter = snapshotter
        self.executor = rollout_executor
        self.trainer = policy_trainer
        self.loader = loader
        self.run = run or RunContext()
        self.events = self.run.events
        self.ledger = ledger
        self.adherence = adherence

    async def _execute(
        self, batch: list[Case], policy_set: ExperienceSet, stage: str, epoch: int
    ) -> list[Rollout]:
        self.run.check_cancelled()
        context = ExecutionContext(
            policy_snapshot_id=await self.snapshotter.snapshot(policy_set),
            run_id=self.run.run_id,
            stage=stage,
            epoch=epoch,
            cancel=self.run.cancel,
        )
        return await self.executor.execute(batch, policy_set, context)

    async def _rollouts(
        self, cases: CaseLoader, policy_set: ExperienceSet, stage: str, epoch: int
    ) -> list[Rollout]:
        total = await cases.count()
        out: list[Rollout] = []
        self.events.progress(stage, 0, total, epoch=epoch)
        async for batch in cases.batches():
            out.extend(await self._execute(batch, policy_set, stage, epoch))
            self.events.progress(stage, len(out), total, epoch=epoch)
        return out

    async def eval(
        self, cases: CaseLoader, policy_set: ExperienceSet, *, stage: str = "eval", epoch: int = -1
    ) -> PipelineEvaluationResult:
        rollouts = await self._rollouts(cases, policy_set, stage, epoch)
        missing = [r.case.name for r in rollouts if r.evaluation is None]
        if missing:
            raise OvtuiError(f"eval needs graded rollouts; no evaluation for: {', '.join(missing[:5])}")
        await self._record_outcomes(rollouts, policy_set)
        report = summarise(stage, epoch, rollouts)
        self.events.emit("eval", **report.model_dump(), accuracy=report.accuracy)
        return PipelineEvaluationResult(report=report, rollouts=rollouts)

    async def train(
        self,
        train_cases: CaseLoader,
        policy_set: ExperienceSet,
        *,
        epochs: int = 1,
        eval_cases: CaseLoader | None = None,
    ) -> PipelineResult:
        result = PipelineResult(policy_set=policy_set)
        if eval_cases is not None:
            result.stages.append((await self.eval(eval_cases, policy_set, stage="baseline_eval")).report)
        total = await train_cases.count()
        for epoch in range(epochs):
            self.run.check_cancelled()
            rollouts_seen: list[Rollout] = []
            commits = errors = 0
            async for batch in train_cases.batches():
                rollouts = await self._execute(batch, policy_set, "train_rollouts", epoch)
                rollouts_seen.extend(rollouts)
                self.events.progress("train_rollouts", len(rollouts_seen), total, epoch=epoch)
                # A case whose execution failed (a remote service's error) counts as failed, but there
                # is nothing in it to learn from: it is reported, never analyzed into experience.
                trainable: list[Rollout] = []
                lost: list[str] = []
                for r in rollouts:
                    if EXECUTION_ERROR in r.metadata:
                        lost.append(f"{r.case.name}: {r.metadata[EXECUTION_ERROR]}")
                    else:
                        trainable.append(r)
                for message in lost:
                    self.events.log(f"not trained on {message}", level="warning")
                if trainable:
                    training = await self._trainer().train_rollouts(trainable, policy_set)
                else:
                    training = RolloutTrainingResult()
                training.errors[:0] = lost
                await self._record_outcomes(rollouts, policy_set, training.analyses)
                result.training.append(training)
                errors += len(training.errors)
                if training.apply_result is not None:
                    commits += len(trainable)
                    policy_set = training.apply_result.updated_policy_set
                else:
                    policy_set = await self.loader.load(previous=policy_set)
            stage = summarise("train_epoch", epoch, rollouts_seen, commits=commits, errors=errors)
            result.stages.append(stage)
            self.events.emit("eval", **stage.model_dump(), accuracy=stage.accuracy)
        result.policy_set = policy_set
        if eval_cases is not None:
            self.run.check_cancelled()
            final = await self.eval(eval_cases, policy_set, stage="final_eval", epoch=epochs)
            result.stages.append(final.report)
        return result

    async def train_from_rollouts(
        self, rollouts: list[Rollout], policy_set: ExperienceSet
    ) -> RolloutTrainingResult:
        return await self._trainer().train_rollouts(rollouts, policy_set)

    async def _record_outcomes(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> None:
        outcomes = rollout_outcomes(rollouts, analyses or []) if self.ledger is not None else []
        if self.ledger is not None and outcomes:
            await asyncio.to_thread(self.ledger.try_record, outcomes)  # a lock and an append: off the loop
        if self.adherence is not None:  # checked against the experiences they ran with
            await self.adherence.record_rollouts(rollouts, policy_set, analyses or [], self.events)

    def _trainer(self) -> PolicyTrainer:
        if self.trainer is None:
            raise OvtuiError("this pipeline was built for eval only: it has no trainer")
        return self.trainer


def summarise(
    stage: str, epoch: int, rollouts: list[Rollout], *, commits: int | None = None, errors: int | None = None
) -> StageReport:
    graded = [r for r in rollouts if r.evaluation is not None]
    passed = sum(1 for r in graded if r.evaluation and r.evaluation.passed)
    results: dict[str, list[int]] = {}
    evidence: dict[str, str] = {}
    for r in rollouts:
        passed_now = bool(r.evaluation and r.evaluation.passed)
        results.setdefault(r.case.name, []).append(int(passed_now))
        # A case's evidence: its first failed trial, else its first trial.
        if r.case.name not in evidence or (not passed_now and all(results[r.case.name][:-1])):
            evidence[r.case.name] = outcome_line(r)
    floors = [r.case.metadata.get("do_nothing_reward") for r in rollouts]
    # The floor, when every case carries it (one count per case, whatever the trials).
    firsts = {r.case.name: r.case.metadata.get("do_nothing_reward") for r in rollouts}
    do_nothing = (
        int(sum(float(v) >= 1.0 for v in firsts.values() if isinstance(v, int | float)))
        if rollouts and all(isinstance(v, int | float) for v in floors)
        else None
    )
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
        results=results,
        evidence=evidence,
        do_nothing_passed=do_nothing,
    )
