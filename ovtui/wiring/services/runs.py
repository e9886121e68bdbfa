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
from ovtui.wiring.services.run_frame import RunFrame

if TYPE_CHECKING:
    from ovtui.core.context import RunSteering
    from ovtui.core.domain import Case
    from ovtui.core.events import Listener
    from ovtui.core.interfaces import CaseLoader
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
    eval_split: str | None = "test"
    limit: int | None = None
    trials: int | None = None  # runs of each eval case (pass^k); None = [trainer] eval_trials
    unseal: bool = False  # evaluate on the eval split even when [evaluation] sealed names it


class Runs:
    def __init__(self, parts: Composition, frame: RunFrame) -> None:
        self.parts = parts
        self.frame = frame
        self.config = parts.config

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
        cfg, parts, frame = self.config.trainer, self.parts, self.frame
        dataset = options.dataset or cfg.dataset
        approve = options.approve or self.config.review.policy
        dry_run = self.config.review.dry_run if options.dry_run is None else options.dry_run
        # None means "from the config"; 0 epochs is a real choice (evaluate only), so no `or` here.
        batch = cfg.batch_size if options.batch_size is None else options.batch_size
        epochs = cfg.epochs if options.epochs is None else options.epochs
        trials = frame.trials(options.trials)
        if epochs < 0 or batch < 1 or (options.limit or 0) < 0:
            raise OvtuiError(
                f"train: epochs must be ≥ 0 (got {epochs}), batch size ≥ 1 (got {batch}), "
                f"limit ≥ 0 (got {options.limit})"
            )
        sealed = await frame.sealed(dataset, options.eval_split, options.unseal)
        async with frame.open("train", dataset, listeners, cancel, steering) as (report, run):
            report.sealed = sealed

            def read_cases() -> tuple[CaseLoader, CaseLoader | None, list[Case]]:
                train_cases = parts.case_loader(dataset, "train", batch, options.limit)
                split = options.eval_split
                eval_cases = parts.eval_cases(dataset, split, batch, trials) if split else None
                return train_cases, eval_cases, parts.validation_cases(dataset, train_cases, batch)

            train_cases, eval_cases, validation = await asyncio.to_thread(read_cases)
            engine = parts.engine(
                run, approve=approve, dry_run=dry_run, wait_for_review=wait_for_review, validation=validation
            )
            policy_set = await parts.loader.load()
            trainer = parts.trainer(cfg.train_with, engine, policy_set)
            pipeline = parts.pipeline(trainer, run, dataset, report)
            frame.started(run, report, epochs=epochs, approve=approve, dry_run=dry_run)
            frame.warn_unread(run, policy_set)
            result = await pipeline.train(train_cases, policy_set, epochs=epochs, eval_cases=eval_cases)
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
        split: str = "test",
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
            report.sealed = sealed
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
