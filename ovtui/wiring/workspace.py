"""The one object the CLI and the app drive: a workspace with its kernel wired from ovtui.toml.

Nothing here knows about Textual. Long operations take listeners (progress, logs, usage, pending
plans) and an asyncio.Event for cancellation, and return a RunReport. Which component stands
behind each Protocol is looked up by name in ``ovtui.wiring.registry``; this module only assembles them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ovtui.core.config import MAX_TRIALS, OvtuiConfig
from ovtui.core.context import RunContext
from ovtui.core.domain import Case, ExperienceSet, PolicyApplyResult
from ovtui.core.errors import OvtuiError, RunCancelled
from ovtui.core.events import EventBus, Listener
from ovtui.core.interfaces import (
    CaseLoader,
    ExperienceReader,
    PolicyTrainer,
    PolicyUpdater,
    RolloutEvaluator,
    RolloutExecutor,
    StreamingTrainer,
)
from ovtui.memory.store import MemoryStore
from ovtui.storage.config_file import load_config
from ovtui.storage.event_log import EventLog
from ovtui.storage.opening import recover_on_start, require_workspace
from ovtui.storage.paths import WorkspacePaths
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.gradient_estimator import ExperienceGradientEstimator
from ovtui.train.components.policy_optimizer import PatchMergePolicyOptimizer
from ovtui.train.components.snapshotter import ContentHashPolicySnapshotter
from ovtui.train.components.trajectory_analyzer import TrajectoryRolloutAnalyzer
from ovtui.train.engine import PolicyTrainingEngine
from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline
from ovtui.train.reports import RunReport, RunTally
from ovtui.train.review.gates.validation import ValidationGate, split_validation
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.policy import (
    ReviewPolicy,
    apply_reviewed,
    evidence_for,
    stale_subplan,
)
from ovtui.wiring.registry import (
    BACKENDS,
    TRAINERS,
    CaseSelection,
    Resources,
    agent,
    agent_reader,
    case_source,
    check_names,
)

if TYPE_CHECKING:
    from ovtui.llm.client import LLMClient
    from ovtui.llm.usage import CallUsage
    from ovtui.sessions.commit import SessionCommitter
    from ovtui.sessions.store import SessionStore
    from ovtui.train.backends.session_extraction import SessionExtractor
    from ovtui.train.review.replan import ReplanResult


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


def run_stamp() -> str:
    """A run's id: its start time to the microsecond (so run folders sort in the order runs began,
    even two in one second) and a random tail (two processes at the same instant)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f") + "_" + uuid.uuid4().hex[:6]


class Workspace:
    def __init__(self, root: Path | str, config: OvtuiConfig | None = None) -> None:
        root = Path(root)
        require_workspace(root)
        self.config = config or load_config(root)
        self.paths = WorkspacePaths(root, self.config.workspace.user)
        check_names(self.config, self.paths.config_file)
        self.store = MemoryStore(self.paths)
        # What start-up recovery finished (an apply a crash interrupted), for the CLI and the app to show.
        self.recovered = recover_on_start(self.paths, self.store.lock)
        self.pending = PendingPlans(self.store)
        self.loader = ExperienceSetLoader(self.store)
        self._llm: LLMClient | None = None
        self._run_events: EventBus | None = None  # where the LLM client's usage goes during a run
        self.resources = Resources(self.config, self.paths, self.store, self.llm_client)

    @property
    def root(self) -> Path:
        return self.paths.root

    @property
    def backend_label(self) -> str:
        return "offline" if self.config.llm.backend == "offline" else f"llm:{self.config.llm.model}"

    def experiences(self) -> ExperienceSet:
        return self.loader.load_sync()

    # --- wiring: components by name from ovtui.wiring.registry ------------------------------------------
    def llm_client(self) -> LLMClient:
        if self._llm is None:
            from ovtui.llm.client import LLMClient

            cache = self.paths.state / "llm_cache" if self.config.llm.cache else None
            self._llm = LLMClient(self.config.llm, cache_dir=cache, on_call=self._report_usage)
        return self._llm

    def _report_usage(self, stage: str, usage: CallUsage, latency: float) -> None:
        if self._run_events is not None:
            self._run_events.emit("usage", **usage.to_event(), latency=latency)

    def updater(self, dry_run: bool) -> PolicyUpdater:
        from ovtui.train.components.policy_updater import DryRunPolicyUpdater, MemoryFilePolicyUpdater

        return DryRunPolicyUpdater(self.store) if dry_run else MemoryFilePolicyUpdater(self.store)

    def executor(self, dataset: str | None = None) -> RolloutExecutor:
        """Who runs the cases: the dataset's case source when it runs its own (a remote service),
        else ``[trainer] agent``."""
        if dataset is not None:
            own = case_source(self.config, dataset).executor(self.resources, dataset)
            if own is not None:
                return own
        return agent(self.config.trainer.agent, self.resources)

    def case_loader(self, dataset: str, split: str, batch_size: int, limit: int | None = None) -> CaseLoader:
        selection = CaseSelection(dataset, split, batch_size, limit)
        return case_source(self.config, dataset).cases(self.resources, selection)

    def trials(self, trials: int | None) -> int:
        """Runs of each eval case: ``trials`` (checked) or ``[trainer] eval_trials``."""
        if trials is None:
            return self.config.trainer.eval_trials
        if not 1 <= trials <= MAX_TRIALS:
            raise OvtuiError(f"trials must be 1 to {MAX_TRIALS} (got {trials})")
        return trials

    def eval_cases(self, dataset: str, split: str, batch_size: int, trials: int = 1) -> CaseLoader:
        """An eval split, each case run ``trials`` times."""
        cases = self.case_loader(dataset, split, batch_size)
        if trials == 1:
            return cases
        from ovtui.train.components.trials import RepeatedCases

        return RepeatedCases(cases, trials)

    def trainer(self, name: str, engine: PolicyTrainingEngine, policy_set: ExperienceSet) -> PolicyTrainer:
        return TRAINERS.get(name)(self.resources, engine, policy_set)

    def engine(
        self,
        run: RunContext,
        *,
        approve: str,
        dry_run: bool,
        wait_for_review: bool,
        validation: list[Case] | None = None,
    ) -> PolicyTrainingEngine:
        backends = BACKENDS.get(self.config.llm.backend)(self.resources)
        return PolicyTrainingEngine(
            TrajectoryRolloutAnalyzer(self.store, backends.extractor),
            ExperienceGradientEstimator(self.store, backends.proposer),
            PatchMergePolicyOptimizer(self.store, backends.merger),
            self.updater(dry_run),
            self.loader,
            review=ReviewPolicy(approve),
            pending=self.pending,
            run=run,
            concurrency=self.config.trainer.rollout_concurrency,
            wait_for_review=wait_for_review,
            gate=ValidationGate(validation, self.executor()) if validation else None,
            reader=self.experience_reader(),
        )

    def experience_reader(self) -> ExperienceReader | None:
        """How ``[trainer] agent`` reads experiences (None: it reads anything), for Review's notes."""
        return agent_reader(self.config.trainer.agent, self.resources.environment)

    def session_committer(self, sessions: SessionStore, run: RunContext) -> SessionCommitter:
        """The committer of this workspace's sessions: its backend's session extractor, and the
        ``[sessions] train_with`` trainer around an engine of ``run`` for the commits' cases."""
        from ovtui.sessions.commit import SessionCommitter, SessionTraining

        async def training() -> SessionTraining:
            review, name = self.config.review, self.config.sessions.train_with
            engine = self.engine(run, approve=review.policy, dry_run=review.dry_run, wait_for_review=False)
            trainer = self.trainer(name, engine, await self.loader.load())
            if not isinstance(trainer, StreamingTrainer):
                raise OvtuiError(f"[sessions] train_with: trainer {name!r} cannot take rollouts one by one")
            return SessionTraining(trainer, engine.analyzer)

        def extractor() -> SessionExtractor:
            return BACKENDS.get(self.config.llm.backend)(self.resources).session_extractor

        return SessionCommitter(
            self.store,
            self.pending,
            sessions,
            run,
            extractor=extractor,
            training=training,
            settings=self.config.sessions,
        )

    def validation_cases(self, dataset: str, train_cases: CaseLoader | None, batch: int) -> list[Case]:
        """Held-out cases for the gate: ``validation.jsonl`` if the dataset has one, else a stable
        ``[trainer] validation`` share of the train split, which is then not trained on (streaming,
        which trains on the inbox, passes the train split itself)."""
        if (self.paths.datasets / dataset / "validation.jsonl").exists():
            loader = self.case_loader(dataset, "validation", batch)
            return list(loader.cases) if isinstance(loader, ListCaseLoader) else []
        if self.config.trainer.validation <= 0 or not isinstance(train_cases, ListCaseLoader):
            return []
        train_cases.cases, held_out = split_validation(train_cases.cases, self.config.trainer.validation)
        return held_out

    def _stream_validation(self) -> list[Case]:
        dataset, batch = self.config.trainer.dataset, self.config.trainer.batch_size
        try:
            return self.validation_cases(dataset, self.case_loader(dataset, "train", batch), batch)
        except OvtuiError:
            return []  # no dataset to validate against: the gate parks plans for the person

    def save_report(self, report: RunReport) -> Path:
        from ovtui.storage.fsio import atomic_write_text

        path = self.paths.runs / report.run_id / "report.json"
        atomic_write_text(
            path, report.model_dump_json(indent=2), root=self.paths.root, temp_dir=self.paths.runs
        )
        return path

    # --- operations ----------------------------------------------------------------------------
    @asynccontextmanager
    async def _run(
        self, command: str, dataset: str, listeners: list[Listener] | None, cancel: asyncio.Event | None
    ) -> AsyncIterator[tuple[RunReport, RunContext]]:
        """A run's report and context; however it ends, the report is saved and ``run_finished`` sent."""
        run_id = run_stamp()
        log = EventLog(self.paths, run_id)
        events = EventBus([log, *(listeners or [])])
        run = RunContext(run_id, events, cancel or asyncio.Event())
        report = RunReport(run_id=run_id, command=command, backend=self.backend_label, dataset=dataset)
        self._run_events = events
        try:
            yield report, run
        except RunCancelled:
            report.cancelled = True
        except asyncio.CancelledError:  # the task itself was cancelled (e.g. while waiting for review)
            report.cancelled = True
            raise
        finally:
            # Plans parked during the run but settled before its end are no longer waiting.
            report.pending_plans = [p for p in report.pending_plans if self.pending.is_waiting(p)]
            report.usage = self._usage()
            self.save_report(report)
            events.emit("run_finished", report=report.model_dump(mode="json"), cancelled=report.cancelled)
            self._run_events = None
            log.close()

    async def train(
        self,
        options: TrainOptions,
        listeners: list[Listener] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        wait_for_review: bool = False,
    ) -> RunReport:
        cfg = self.config.trainer
        dataset = options.dataset or cfg.dataset
        approve = options.approve or self.config.review.policy
        dry_run = self.config.review.dry_run if options.dry_run is None else options.dry_run
        # None means "from the config"; 0 epochs is a real choice (evaluate only), so no `or` here.
        batch = cfg.batch_size if options.batch_size is None else options.batch_size
        epochs = cfg.epochs if options.epochs is None else options.epochs
        trials = self.trials(options.trials)
        if epochs < 0 or batch < 1 or (options.limit or 0) < 0:
            raise OvtuiError(
                f"train: epochs must be ≥ 0 (got {epochs}), batch size ≥ 1 (got {batch}), "
                f"limit ≥ 0 (got {options.limit})"
            )
        async with self._run("train", dataset, listeners, cancel) as (report, run):
            train_cases = self.case_loader(dataset, "train", batch, options.limit)
            eval_cases = (
                self.eval_cases(dataset, options.eval_split, batch, trials) if options.eval_split else None
            )
            validation = self.validation_cases(dataset, train_cases, batch)
            engine = self.engine(
                run, approve=approve, dry_run=dry_run, wait_for_review=wait_for_review, validation=validation
            )
            policy_set = await self.loader.load()
            trainer = self.trainer(self.config.trainer.train_with, engine, policy_set)
            pipeline = self._pipeline(trainer, run, dataset, report)
            run.events.emit(
                "run_started",
                run_id=report.run_id,
                command="train",
                dataset=dataset,
                backend=self.backend_label,
                epochs=epochs,
                approve=approve,
                dry_run=dry_run,
            )
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
    ) -> RunReport:
        """Accuracy of the current policy; eval never analyzes or writes memory (only its report).
        ``trials`` runs each case that many times (pass^k); None = ``[trainer] eval_trials``."""
        dataset = dataset or self.config.trainer.dataset
        runs = self.trials(trials)
        async with self._run("eval", dataset, listeners, cancel) as (report, run):
            cases = self.eval_cases(dataset, split, self.config.trainer.batch_size, runs)
            policy_set = await self.loader.load()
            pipeline = self._pipeline(None, run, dataset, report)  # eval never trains: no engine, no trainer
            run.events.emit(
                "run_started",
                run_id=report.run_id,
                command="eval",
                dataset=dataset,
                backend=self.backend_label,
            )
            evaluation = await pipeline.eval(cases, policy_set)
            report.stages.append(evaluation.report)
        return report

    def _pipeline(
        self, trainer: PolicyTrainer | None, run: RunContext, dataset: str, report: RunReport
    ) -> OfflinePolicyOptimizationPipeline:
        executor = self.executor(dataset)
        # A remote executor's per-service counts are the report's (the same Counter, filled live).
        report.services = getattr(executor, "counts", report.services)
        return OfflinePolicyOptimizationPipeline(
            ContentHashPolicySnapshotter(), executor, trainer, self.loader, run
        )

    async def stream(
        self,
        listeners: list[Listener] | None = None,
        stop: asyncio.Event | None = None,
        *,
        approve: str | None = None,
        dry_run: bool | None = None,
        wait_for_review: bool = False,
    ) -> RunReport:
        """Train from ``inbox/rollouts/`` until ``stop`` is set (``train --watch``, the app's streaming)."""
        from ovtui.train.inbox import InboxProcessor

        approve = approve or self.config.review.policy
        dry_run = self.config.review.dry_run if dry_run is None else dry_run
        async with self._run("stream", INBOX_LABEL, listeners, None) as (report, run):
            validation = self._stream_validation()
            engine = self.engine(
                run, approve=approve, dry_run=dry_run, wait_for_review=wait_for_review, validation=validation
            )
            name = self.config.trainer.stream_with
            trainer = self.trainer(name, engine, await self.loader.load())
            if not isinstance(trainer, StreamingTrainer):
                raise OvtuiError(f"[trainer] stream_with: trainer {name!r} cannot take rollouts one by one")
            inbox = InboxProcessor(self.paths, trainer.submit_rollout, run.events, self.evaluator_for)
            tally = RunTally()
            run.events.listeners.append(tally)
            run.events.emit(
                "run_started",
                run_id=report.run_id,
                command="stream",
                dataset=INBOX_LABEL,
                backend=self.backend_label,
                approve=approve,
                dry_run=dry_run,
            )
            try:
                await inbox.watch(stop or asyncio.Event())
            finally:
                await trainer.close()
                await inbox.drain()
                report.inbox = {"processed": inbox.processed, "rejected": inbox.rejected_count}
                report.history_ids, report.pending_plans = tally.history_ids, tally.pending_plans
                if inbox.rejected_count:
                    report.errors.append(f"{inbox.rejected_count} file(s) rejected")
        return report

    def evaluator_for(self, case: Case) -> RolloutEvaluator | None:
        """The evaluator that can grade ``case`` (for inbox rollouts that come without one): the
        environment of the local datasets (``[trainer] environment``), when it grades such a case."""
        environment = self.resources.environment()
        return environment if environment.can_grade(case) else None

    async def apply_pending(self, plan_id: str, *, dry_run: bool = False) -> PolicyApplyResult:
        """Apply a reviewed plan: the same path as ``--approve all``, so files and records match.

        A plan whose approved items were all refused as stale stays waiting (marked stale) so it can
        be re-planned; when only some were, the plan is settled and those items wait as
        ``<plan_id>-stale``. ``describe_apply`` says which happened. The plan is claimed for the
        whole apply, so it is applied once however many processes try; the others get
        ``PlanSettledError`` saying who applied it."""
        async with self.pending.claimed([plan_id]) as claim:
            # Under the plan's lock from here: a second apply (any process) waits, then finds it settled.
            [pending] = claim.plans
            if not dry_run:
                claim.settle_if_recorded(pending)
            if pending.undecided:
                raise OvtuiError(f"plan {plan_id} still has {pending.undecided} undecided item(s)")
            result, chosen = await apply_reviewed(
                self.updater(dry_run), pending.plan, pending.decisions, self.experiences()
            )
            if dry_run:
                return result
            stale = [chosen[i] for i in result.stale_items if i < len(chosen)]
            if stale and not (result.written_uris or result.deleted_uris):
                claim.mark_stale(pending, stale)
                return result
            claim.settle(pending, "applied", result.history_id)
        if stale:
            subplan = stale_subplan(pending.plan, stale)
            parked = self.pending.park_stale(subplan, pending.run_id, evidence_for(subplan, pending.evidence))
            result.metadata["stale_plan"] = parked.plan_id
        return result

    def discard_pending(self, plan_id: str) -> None:
        self.pending.settle(self.pending.get(plan_id), "discarded", None)

    async def replan(self, plan_ids: list[str], listeners: list[Listener] | None = None) -> ReplanResult:
        """Re-plan waiting plans against the current experiences, as one fresh plan."""
        from ovtui.train.review.replan import replan

        run = RunContext(events=EventBus(listeners))
        engine = self.engine(run, approve="ask", dry_run=False, wait_for_review=False)
        return await replan(engine, self.pending, plan_ids, await self.loader.load())

    async def replan_stale(self, listeners: list[Listener] | None = None) -> ReplanResult | None:
        """Re-plan every waiting plan that has a stale item, in one action (None: none is stale)."""
        from ovtui.train.review.replan import stale_plan_ids

        plan_ids = stale_plan_ids(self.pending, self.experiences())
        return await self.replan(plan_ids, listeners) if plan_ids else None

    def _usage(self) -> dict[str, dict[str, float | int]]:
        if self._llm is None:
            return {}
        return dict(self._llm.usage.snapshot())
