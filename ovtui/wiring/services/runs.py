"""Runs that train or score the workspace's own policy: ``train`` (epochs over a dataset),
``evaluate`` (accuracy, nothing written but the report) and ``stream`` (training from
``inbox/rollouts/`` until stopped).

Every coroutine keeps the event loop free: file work and lock waits run in threads. Each takes
listeners (progress, logs, usage, pending plans) and an ``asyncio.Event`` to cancel or stop, and
returns the run's report.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ovtui.core.errors import OvtuiError
from ovtui.core.splits import VALIDATION_SPLIT
from ovtui.wiring.composition import TrainPlan
from ovtui.wiring.services.run_frame import RunFrame

if TYPE_CHECKING:
    from ovtui.core.context import RunSteering
    from ovtui.core.events import Listener
    from ovtui.train.reports import RunReport
    from ovtui.wiring.composition import Composition

INBOX_LABEL = "inbox/rollouts/"  # what a streaming run trains on, where a run names its dataset


@dataclass
class TrainOptions:
    dataset: str | None = None
    epochs: int | None = None
    batch_size: int | None = None
    approve: str | None = None  # review policy; None = from config
    dry_run: bool | None = None
    # Scored at baseline and after the epochs: validation; a sealed split only with ``unseal``.
    eval_split: str | None = VALIDATION_SPLIT
    limit: int | None = None
    trials: int | None = None  # runs of each eval case (pass^k); None = [trainer] eval_trials
    unseal: bool = False  # evaluate on the eval split even when [evaluation] sealed names it


class Runs:
    def __init__(self, parts: Composition, frame: RunFrame) -> None:
        self.parts = parts
        self.frame = frame
        self.config = parts.config

    def plan(self, options: TrainOptions, *, wait_for_review: bool = False) -> TrainPlan:
        """``options`` resolved against ovtui.toml once, checked: what the run is built from."""
        cfg, review = self.config.trainer, self.config.review
        # None means "from the config"; 0 epochs is a real choice (evaluate only), so no `or` here.
        plan = TrainPlan(
            dataset=options.dataset or cfg.dataset,
            epochs=cfg.epochs if options.epochs is None else options.epochs,
            batch_size=cfg.batch_size if options.batch_size is None else options.batch_size,
            approve=options.approve or review.policy,
            dry_run=review.dry_run if options.dry_run is None else options.dry_run,
            eval_split=options.eval_split,
            limit=options.limit,
            trials=self.frame.trials(options.trials),
            wait_for_review=wait_for_review,
        )
        if plan.epochs < 0 or plan.batch_size < 1 or (plan.limit or 0) < 0:
            raise OvtuiError(
                f"train: epochs must be ≥ 0 (got {plan.epochs}), batch size ≥ 1 (got {plan.batch_size}), "
                f"limit ≥ 0 (got {plan.limit})"
            )
        return plan

    async def train(
        self,
        options: TrainOptions,
        listeners: list[Listener] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        wait_for_review: bool = False,
        steering: RunSteering | None = None,
    ) -> RunReport:
        """Train on a dataset's cases. ``wait_for_review``: a parked plan holds the run until a
        person settles it (in any process); ``steering``: what a person changes while it runs."""
        frame = self.frame
        plan = self.plan(options, wait_for_review=wait_for_review)
        sealed = await frame.sealed(plan.dataset, plan.eval_split, options.unseal)
        async with frame.open("train", plan.dataset, listeners, cancel, steering) as (report, run):
            report.sealed, report.split = sealed, plan.eval_split
            built = await asyncio.to_thread(self.parts.training_run, run, report, plan)
            frame.started(run, report, epochs=plan.epochs, approve=plan.approve, dry_run=plan.dry_run)
            frame.warn_unread(run, built.policy_set)
            result = await built.pipeline.train(
                built.train_cases, built.policy_set, epochs=plan.epochs, eval_cases=built.eval_cases
            )
            report.stages = result.stages
            for training in result.training:
                report.errors += training.errors
                if training.apply_result and training.apply_result.history_id:
                    report.history_ids.append(training.apply_result.history_id)
                if training.metadata.get("pending_plan"):
                    report.pending_plans.append(str(training.metadata["pending_plan"]))
        return report

    async def evaluate(
        self,
        dataset: str | None = None,
        split: str = VALIDATION_SPLIT,
        listeners: list[Listener] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        trials: int | None = None,
        unseal: bool = False,
    ) -> RunReport:
        """Accuracy of the current policy; eval never analyzes or writes memory (only its report).
        ``trials`` runs each case that many times (pass^k); None = ``[trainer] eval_trials``.
        A sealed split is scored only with ``unseal`` (and counted)."""
        parts, frame = self.parts, self.frame
        dataset = dataset or self.config.trainer.dataset
        runs = frame.trials(trials)
        sealed = await frame.sealed(dataset, split, unseal)
        async with frame.open("eval", dataset, listeners, cancel) as (report, run):
            report.sealed, report.split = sealed, split
            batch = self.config.trainer.batch_size
            cases = await asyncio.to_thread(parts.eval_cases, dataset, split, batch, runs)
            policy_set = await parts.loader.load()
            pipeline = parts.pipeline(None, run, dataset, report)  # eval never trains: no engine
            frame.started(run, report)
            frame.warn_unread(run, policy_set)
            evaluation = await pipeline.eval(cases, policy_set)
            report.stages.append(evaluation.report)
        return report

    async def stream(
        self,
        listeners: list[Listener] | None = None,
        stop: asyncio.Event | None = None,
        *,
        approve: str | None = None,
        dry_run: bool | None = None,
        wait_for_review: bool = False,
        steering: RunSteering | None = None,
    ) -> RunReport:
        """Train from ``inbox/rollouts/`` until ``stop`` is set (``train --watch``, the app's streaming)."""
        from ovtui.core.interfaces import StreamingTrainer
        from ovtui.train.inbox import InboxProcessor

        parts, frame = self.parts, self.frame
        approve = approve or self.config.review.policy
        dry_run = self.config.review.dry_run if dry_run is None else dry_run
        async with frame.open("stream", INBOX_LABEL, listeners, None, steering) as (report, run):
            validation = await asyncio.to_thread(parts.stream_validation)
            engine = parts.engine(
                run, approve=approve, dry_run=dry_run, wait_for_review=wait_for_review, validation=validation
            )
            name = self.config.trainer.stream_with
            trainer = parts.trainer(name, engine, await parts.loader.load())
            if not isinstance(trainer, StreamingTrainer):
                raise OvtuiError(f"[trainer] stream_with: trainer {name!r} cannot take rollouts one by one")
            inbox = InboxProcessor(parts.paths, trainer.submit_rollout, run.events, parts.evaluator_for)
            frame.started(run, report, approve=approve, dry_run=dry_run)
            try:
                await inbox.watch(stop or asyncio.Event())
            finally:
                await trainer.close()
                await inbox.drain()
                report.inbox = {"processed": inbox.processed, "rejected": inbox.rejected_count}
                if inbox.rejected_count:
                    report.errors.append(f"{inbox.rejected_count} file(s) rejected")
        return report
