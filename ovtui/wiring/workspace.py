"""The one object the CLI, the app and the servers drive: a workspace, its use cases and the read
models its screens show.

Use cases: ``train``, ``evaluate``, ``stream``, ``compare`` (runs; a sealed split only when asked,
and counted); ``drift_check`` and ``revalidate`` (what drifted since experiences were learned, and
their cases rerun); ``utility_plan`` / ``utility`` (each experience's leave-one-out ablation, its
results read back by ``utility_results``); ``decide`` / ``decide_items`` /
``decide_all``, ``edit_item``, ``apply_pending``, ``discard_pending``, ``replan`` /
``replan_stale`` (review); ``revert``; ``commit`` (a conversation file); ``find``, ``search``,
``read``, ``abstract``, ``overview``, ``ls``, ``stat``, ``session_context``, ``session_archive``,
``delete_session`` (what an agent reads back, each for a ``Visibility``), with ``record_uses``
where a served memory is recorded in the use ledger; read models: pending plans, history records,
memories by type, one memory, memory uses (the use ledger), sessions, a policy by name
(``policy``), a run's report and its HTML page (``run_report``, ``html_report``). Callers never reach the
parts (paths, store, pending plans, loader, the kernel's components): what they need is a method
here. The kernel is assembled by ``ovtui.wiring.composition`` when a use case first needs it, and
the modules behind each use case are imported when it runs, so opening a workspace to read its
history stays quick.

Every coroutine here keeps the event loop free: file work and lock waits run in threads
(``asyncio.to_thread``). The synchronous methods do file work in the caller's thread: the app calls
them from its workers, the CLI directly. Nothing here knows about Textual. Long operations take
listeners (progress, logs, usage, pending plans) and an asyncio.Event for cancellation, and return
a RunReport.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ovtui.core.config import MAX_TRIALS, OvtuiConfig
from ovtui.core.errors import ConfigError, OvtuiError, RunCancelled
from ovtui.memory.store import MemoryStore
from ovtui.storage.config_file import load_config, save_config
from ovtui.storage.opening import recover_on_start, require_workspace
from ovtui.storage.paths import CONFIG_FILE, WorkspacePaths
from ovtui.wiring.registry import check_names

if TYPE_CHECKING:
    from ovtui.core.context import RunContext, RunSteering
    from ovtui.core.domain import Case, Experience, ExperienceSet, PolicyApplyResult, PolicyPlanItem
    from ovtui.core.events import EventBus, Listener
    from ovtui.core.fileformat import MemoryFile
    from ovtui.core.interfaces import CaseLoader
    from ovtui.llm.capabilities import Capabilities
    from ovtui.llm.tokens import TokenCounter
    from ovtui.memory.history import HistoryEntry, HistoryStore
    from ovtui.memory.ledger import UseLedger
    from ovtui.memory.ledger_state import Fed, Usage, Via
    from ovtui.memory.memory_diff import MemoryDiff
    from ovtui.memory.policy_at import NamedPolicy
    from ovtui.memory.retrieval.access import Visibility
    from ovtui.memory.retrieval.content import ListOptions
    from ovtui.memory.retrieval.service import FindQuery, Found, Retrieval, SummaryKind
    from ovtui.memory.revert import RevertResult
    from ovtui.sessions.commit import CommitOutcome, SessionCommitter
    from ovtui.sessions.inbox import SessionInbox
    from ovtui.sessions.overview import SessionView
    from ovtui.sessions.store import SessionStore
    from ovtui.storage.event_log import EventLog
    from ovtui.storage.jobs import JobStore
    from ovtui.storage.watching import WorkspaceChanges
    from ovtui.train.components.experience_set_loader import ExperienceSetLoader
    from ovtui.train.reports import RunReport
    from ovtui.train.revalidation import DriftCheck, Revalidation, Setup
    from ovtui.train.review.gates.contradictions import Stands
    from ovtui.train.review.pending import PendingPlans
    from ovtui.train.review.plans import Decision, PendingPlan
    from ovtui.train.review.replan import ReplanResult
    from ovtui.train.utility import UtilityOutcome, UtilityPlan, UtilityRecord
    from ovtui.wiring.composition import Composition


RECENT_USER_MESSAGES = 3  # of a session, shaping the query of a search made for it
INBOX_LABEL = "inbox/rollouts/"  # what a streaming run trains on, where a run names its dataset
REPORT_FILE = "report.json"
BATCH = 64  # cases read at a time where a whole split is read to pick cases by name


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


@dataclass
class CompareOptions:
    """``ovtui compare A B``: each policy ``current``, a history record (the policy right after
    it) or a folder of experience files, run on ``split`` with ``trials`` runs of each case."""

    a: str
    b: str
    dataset: str | None = None
    split: str = "test"
    trials: int | None = None  # None = [trainer] eval_trials
    unseal: bool = False


@dataclass
class UtilityOptions:
    """``ovtui utility``: the experiences named, else the ``top`` most used, else all, each
    measured on its cases of ``split`` with ``trials`` runs of each."""

    dataset: str | None = None
    split: str = "train"
    experiences: list[str] = field(default_factory=list)
    top: int | None = None
    trials: int | None = None  # None = [trainer] eval_trials


@dataclass(frozen=True)
class EndpointReport:
    """What ``doctor`` found the ``[llm]`` endpoint to support, and where it was recorded."""

    base_url: str
    model: str
    capabilities: Capabilities
    context_window: int
    window_source: str
    recorded_in: str


@dataclass
class MemoryListing:
    """The files of one memory type, the user's and then each peer's, with the name each is shown
    by, and what could not be read (a file, or a peer's folder leading outside)."""

    files: list[tuple[str, MemoryFile]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def login_name() -> str:
    """The OS login of this process, who a decision is by when no reviewer is named."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name and no entry in the user database (a bare container)
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"


def _joined(first: list[str], second: list[str]) -> list[str]:
    """Both lists' ids in order, each once."""
    return list(dict.fromkeys([*first, *second]))


def _first_line(exc: Exception) -> str:
    return next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


async def _all_cases(loader: CaseLoader) -> list[Case]:
    return [case async for batch in loader.batches() for case in batch]


def run_stamp() -> str:
    """A run's id: its start time to the microsecond (so run folders sort in the order runs began,
    even two in one second) and a random tail (two processes at the same instant)."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f") + "_" + uuid.uuid4().hex[:6]


def open_memory(root: Path, user: str, *, reading: bool = False) -> tuple[MemoryStore, str | None]:
    """A workspace folder's memory, once what a crash interrupted (an apply) is finished; and what
    that recovery did, for the CLI and the app to show. ``reading``: the caller only reads, so a
    recovery the disk refuses (full, read-only) is said, not raised."""
    store = MemoryStore(WorkspacePaths(root, user))
    return store, recover_on_start(store.paths, store.lock, reading=reading)


def memory_to_check(root: Path | str) -> tuple[MemoryStore, str | None]:
    """The memory of a workspace for ``ovtui check``, opened as a workspace opens it, and even when
    its ovtui.toml does not read (the check reports that itself; the user is then the default)."""
    root = Path(root)
    require_workspace(root)
    try:
        user = load_config(root).workspace.user
    except ConfigError:
        user = OvtuiConfig().workspace.user
    return open_memory(root, user, reading=True)


class Workspace:
    def __init__(self, root: Path | str, config: OvtuiConfig | None = None, *, reading: bool = False) -> None:
        """``reading``: opened to read only (history, a plan's listing), so on a full or read-only
        disk a recovery that cannot be finished is said in ``recovered`` instead of raised."""
        root = Path(root)
        require_workspace(root)
        self.config = config or load_config(root)
        check_names(self.config, root / CONFIG_FILE)
        self._store, self.recovered = open_memory(root, self.config.workspace.user, reading=reading)
        self._paths = self._store.paths
        self._tokens: TokenCounter | None = None

    @property
    def root(self) -> Path:
        return self._paths.root

    @property
    def backend_label(self) -> str:
        return "offline" if self.config.llm.backend == "offline" else f"llm:{self.config.llm.model}"

    async def aclose(self) -> None:
        """Close the connections this workspace's clients opened in the running event loop (the
        LLM's, the embeddings', an environment's own models'). Call it where a loop that used the
        workspace ends: a command, a run's worker, a server, the app. The next use, in that loop or
        another, opens new ones."""
        if "_kernel" in self.__dict__:
            await self._kernel.aclose()
        if "_retrieval" in self.__dict__:
            await self._retrieval.aclose()

    # --- the parts, each made when a use case first needs it --------------------------------------
    @cached_property
    def _pending(self) -> PendingPlans:
        from ovtui.train.review.pending import PendingPlans

        return PendingPlans(self._store, second_approver_for=self.config.review.second_approver_for)

    @cached_property
    def _loader(self) -> ExperienceSetLoader:
        from ovtui.train.components.experience_set_loader import ExperienceSetLoader

        return ExperienceSetLoader(self._store)

    @cached_property
    def _kernel(self) -> Composition:
        from ovtui.wiring.composition import Composition

        return Composition(self.config, self._store, self._pending, self._loader)

    def _history(self) -> HistoryStore:
        from ovtui.memory.history import HistoryStore

        return HistoryStore(self._paths)

    async def doctor(self) -> EndpointReport:
        """Probe ``[llm]``'s endpoint afresh for what it supports and its context window, and
        record the answer in the workspace (``.ovtui/endpoints.json``) for the runs to come."""
        from ovtui.storage.paths import ENDPOINTS_FILE

        client = self._kernel.llm_client()
        try:
            capabilities = await client.probe()
            window = await client.context_window()
        finally:
            await client.aclose()
            self._kernel.forget_llm_client()
        llm = self.config.llm
        return EndpointReport(
            llm.base_url, llm.model, capabilities, window, client.window_source, ENDPOINTS_FILE
        )

    def _trials(self, trials: int | None) -> int:
        """Runs of each eval case: ``trials`` (checked) or ``[trainer] eval_trials``."""
        if trials is None:
            return self.config.trainer.eval_trials
        if not 1 <= trials <= MAX_TRIALS:
            raise OvtuiError(f"trials must be 1 to {MAX_TRIALS} (got {trials})")
        return trials

    def _save_report(self, report: RunReport) -> None:
        from ovtui.storage.fsio import atomic_write_text

        path = self.report_path(report.run_id)
        atomic_write_text(
            path, report.model_dump_json(indent=2), root=self._paths.root, temp_dir=self._paths.runs
        )

    async def _sealed(self, dataset: str, split: str | None, unseal: bool) -> dict[str, int]:
        """For a run about to score ``split``: nothing when the split is not sealed; when it is and
        ``unseal`` asks to score it, ``{"<dataset>/<split>": runs that scored it}``, this one
        counted; when it is not asked for, refused, saying how often it was scored. Counted before
        the run opens, so a refused or unreadable count leaves no run behind."""
        if split is None or split not in self.config.evaluation.sealed:
            return {}
        from ovtui.storage.sealed import count_scoring, sealed_scores

        key = f"{dataset}/{split}"
        if not unseal:
            scored = (await asyncio.to_thread(sealed_scores, self._paths)).get(key, 0)
            raise OvtuiError(
                f"split {split!r} is sealed ([evaluation] sealed): it is scored only on explicit "
                f"request (--unseal); {key} has been scored {scored} time(s)"
            )
        return {key: await asyncio.to_thread(count_scoring, self._paths, self._store.lock, key)}

    # --- runs ----------------------------------------------------------------------------------
    @asynccontextmanager
    async def _run(
        self,
        command: str,
        dataset: str,
        listeners: list[Listener] | None,
        cancel: asyncio.Event | None,
        steering: RunSteering | None = None,
    ) -> AsyncIterator[tuple[RunReport, RunContext]]:
        """A run's report and context; however it ends, the report is saved and ``run_finished`` sent."""
        from ovtui.core.context import RunContext, RunSteering
        from ovtui.core.events import EventBus
        from ovtui.storage.event_log import EventLog
        from ovtui.train.reports import RunReport, RunTally, failure_reason

        run_id = run_stamp()
        log = EventLog(self._paths, run_id)
        # What the run applied and parked, from its events: a run stopped half-way (cancelled
        # while a plan waits, failed) has no results to collect them from.
        tally = RunTally()
        events = EventBus([log, tally, *(listeners or [])])
        run = RunContext(run_id, events, cancel or asyncio.Event(), steering or RunSteering())
        report = RunReport(run_id=run_id, command=command, backend=self.backend_label, dataset=dataset)
        kernel = self._kernel
        kernel.run_events = events
        failed = False
        try:
            yield report, run
        except RunCancelled:
            report.cancelled = True
        except asyncio.CancelledError:  # the task itself was cancelled (e.g. while waiting for review)
            report.cancelled = True
            raise
        except Exception as exc:
            failed = True
            report.failed = failure_reason(exc)
            report.errors.append(report.failed)
            raise
        except BaseException:
            failed = True
            raise
        finally:
            report.usage = kernel.usage()
            report.history_ids = _joined(report.history_ids, tally.history_ids)
            report.pending_plans = _joined(report.pending_plans, tally.pending_plans)
            try:
                await asyncio.to_thread(self._close_report, report)
            except OSError:
                # The disk that stopped the run (full, read-only) refuses its report too: the run's
                # own error is the one to show, in one line.
                if not failed:
                    raise
            finally:  # cancelled again meanwhile: the thread still saves the report
                events.emit(
                    "run_finished",
                    report=report.model_dump(mode="json"),
                    cancelled=report.cancelled,
                    failed=report.failed,
                )
                kernel.run_events = None
                log.close()

    def _close_report(self, report: RunReport) -> None:
        # Plans parked during the run but settled before its end are no longer waiting.
        report.pending_plans = [p for p in report.pending_plans if self._pending.is_waiting(p)]
        self._save_report(report)

    @staticmethod
    def _started(run: RunContext, report: RunReport, **settings: Any) -> None:
        """``run_started``: what every run says once its parts are built, before its first case."""
        run.events.emit(
            "run_started",
            run_id=report.run_id,
            command=report.command,
            dataset=report.dataset,
            backend=report.backend,
            **settings,
        )

    @staticmethod
    def _warn_unread(run: RunContext, policy_set: ExperienceSet) -> None:
        """An experience file the loader could not read is left out of the run: said, never silently."""
        for problem in policy_set.metadata.get("problems", []):
            run.events.log(f"experience left out of this run: {problem}", level="warning")

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
        cfg = self.config.trainer
        dataset = options.dataset or cfg.dataset
        approve = options.approve or self.config.review.policy
        dry_run = self.config.review.dry_run if options.dry_run is None else options.dry_run
        # None means "from the config"; 0 epochs is a real choice (evaluate only), so no `or` here.
        batch = cfg.batch_size if options.batch_size is None else options.batch_size
        epochs = cfg.epochs if options.epochs is None else options.epochs
        trials = self._trials(options.trials)
        if epochs < 0 or batch < 1 or (options.limit or 0) < 0:
            raise OvtuiError(
                f"train: epochs must be ≥ 0 (got {epochs}), batch size ≥ 1 (got {batch}), "
                f"limit ≥ 0 (got {options.limit})"
            )
        sealed = await self._sealed(dataset, options.eval_split, options.unseal)
        async with self._run("train", dataset, listeners, cancel, steering) as (report, run):
            report.sealed = sealed
            kernel = self._kernel

            def read_cases() -> tuple[CaseLoader, CaseLoader | None, list[Case]]:
                train_cases = kernel.case_loader(dataset, "train", batch, options.limit)
                split = options.eval_split
                eval_cases = kernel.eval_cases(dataset, split, batch, trials) if split else None
                return train_cases, eval_cases, kernel.validation_cases(dataset, train_cases, batch)

            train_cases, eval_cases, validation = await asyncio.to_thread(read_cases)
            engine = kernel.engine(
                run, approve=approve, dry_run=dry_run, wait_for_review=wait_for_review, validation=validation
            )
            policy_set = await self._loader.load()
            trainer = kernel.trainer(self.config.trainer.train_with, engine, policy_set)
            pipeline = kernel.pipeline(trainer, run, dataset, report)
            self._started(run, report, epochs=epochs, approve=approve, dry_run=dry_run)
            self._warn_unread(run, policy_set)
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
        dataset = dataset or self.config.trainer.dataset
        runs = self._trials(trials)
        sealed = await self._sealed(dataset, split, unseal)
        async with self._run("eval", dataset, listeners, cancel) as (report, run):
            report.sealed = sealed
            batch = self.config.trainer.batch_size
            cases = await asyncio.to_thread(self._kernel.eval_cases, dataset, split, batch, runs)
            policy_set = await self._loader.load()
            pipeline = self._kernel.pipeline(None, run, dataset, report)  # eval never trains: no engine
            self._started(run, report)
            self._warn_unread(run, policy_set)
            evaluation = await pipeline.eval(cases, policy_set)
            report.stages.append(evaluation.report)
        return report

    async def compare(
        self,
        options: CompareOptions,
        listeners: list[Listener] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunReport:
        """B against A on the same cases, trials and order, and A against itself (the A/A null)
        beside it: the paired delta, its interval, McNemar's p, the flips both ways with what each
        agent did, and the verdict by the paired rule (``[evaluation] k``). Nothing is written but
        the run's report; outcomes are not linked in the use ledger (these are not the workspace's
        policies)."""
        from ovtui.train.comparison import STAGE_A, STAGE_AA, STAGE_B, comparison

        dataset = options.dataset or self.config.trainer.dataset
        trials = self._trials(options.trials)
        current = await self._loader.load()

        def policies() -> tuple[NamedPolicy, NamedPolicy]:
            return self.policy(options.a, current), self.policy(options.b, current)

        a, b = await asyncio.to_thread(policies)  # a name that is no policy counts no scoring
        sealed = await self._sealed(dataset, options.split, options.unseal)
        async with self._run("compare", dataset, listeners, cancel) as (report, run):
            report.sealed = sealed
            batch = self.config.trainer.batch_size
            cases = await asyncio.to_thread(self._kernel.eval_cases, dataset, options.split, batch, trials)
            pipeline = self._kernel.pipeline(None, run, dataset, report, record_outcomes=False)
            self._started(run, report, a=a.label, b=b.label, split=options.split, trials=trials)
            for stage, policy in ((STAGE_A, a), (STAGE_B, b), (STAGE_AA, a)):
                report.stages.append((await pipeline.eval(cases, policy.policy_set, stage=stage)).report)
            first, second, again = report.stages
            report.comparison = comparison(
                (a.label, b.label),
                options.split,
                trials,
                self.config.evaluation.k,
                (first.results, second.results, again.results),
                (first.evidence, second.evidence),
            )
        return report

    async def utility_plan(self, options: UtilityOptions) -> UtilityPlan:
        """Which experiences a utility run measures, on which cases, and its agent runs: nothing
        is run. Cases: those each experience was served for (the ledger's results, by their
        trajectories) and learned from (its links), as far as ``split`` holds them."""
        from ovtui.train.components.snapshotter import ContentHashPolicySnapshotter
        from ovtui.train.utility import choose, plan_ablations

        dataset = options.dataset or self.config.trainer.dataset
        trials = self._trials(options.trials)
        if options.top is not None and options.top < 1:
            raise OvtuiError(f"--top must be at least 1 (got {options.top})")
        if options.split in self.config.evaluation.sealed:  # ablations are tuning: never on a sealed split
            raise OvtuiError(
                f"split {options.split!r} is sealed ([evaluation] sealed): utility never scores it "
                "(--split names another)"
            )
        policy = await self._loader.load()
        loader = await asyncio.to_thread(self._kernel.case_loader, dataset, options.split, BATCH)
        split_cases = await _all_cases(loader)

        def planned() -> UtilityPlan:
            uses = {uri: usage.count for uri, usage in self._ledger.usage().items()}
            chosen = choose(policy, options.experiences, options.top, uses)
            policy_id = ContentHashPolicySnapshotter().snapshot_id(policy)
            where = (dataset, options.split, trials)
            return plan_ablations(policy, policy_id, chosen, self._utility_cases, split_cases, where)

        return await asyncio.to_thread(planned)

    def _utility_cases(self, experience: Experience) -> set[str]:
        """The cases an experience was learned from (its links) and fed (the trajectories of its
        results in the ledger)."""
        from ovtui.train.revalidation import linked_cases, trajectory_cases

        fed = [result.trajectory for result in self._ledger.fed(experience.uri) if result.trajectory]
        return {*linked_cases(self._store, experience), *trajectory_cases(self._store, fed)}

    async def utility(
        self,
        plan: UtilityPlan,
        listeners: list[Listener] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        tokens: TokenCounter | None = None,
    ) -> UtilityOutcome:
        """Run ``plan``: each result saved in ``.ovtui/utility.json`` as it comes (a cancelled run
        keeps them), then the harmful and no-effect ones parked as one delete plan for review.
        Outcomes are not linked in the use ledger (the ablated policies are not the workspace's).
        ``tokens`` counts each experience's cost (default: the workspace's ``token_counter``)."""
        from ovtui.train.review.plans import ItemDecision
        from ovtui.train.utility import (
            PLAN_SOURCE,
            ExperienceUtility,
            UtilityOutcome,
            measure,
            prune_plan,
            save_utility,
        )

        outcome = UtilityOutcome(run_id="", measured=[], cancelled=False)
        counter = tokens or await self.token_counter()

        async def save(entry: ExperienceUtility) -> None:
            await asyncio.to_thread(save_utility, self._paths, self._store.lock, entry, counter.tokenizer)
            outcome.measured.append(entry)

        async with self._run("utility", plan.dataset, listeners, cancel) as (report, run):
            outcome.run_id = report.run_id
            pipeline = self._kernel.pipeline(None, run, plan.dataset, report, record_outcomes=False)
            self._started(run, report, split=plan.split, trials=plan.trials, experiences=len(plan.ablations))
            batch, k = self.config.trainer.batch_size, self.config.evaluation.k
            await measure(plan, pipeline, batch, k, counter, save)
        outcome.cancelled, outcome.failed = report.cancelled, report.failed

        def propose() -> str | None:
            waiting = [p for p in self._pending.list() if p.plan.metadata.get("source") == PLAN_SOURCE]
            proposed = {item.target_uri or "" for p in waiting for item in p.plan.items}
            prune = prune_plan(outcome.measured, plan.policy, proposed)
            if not prune.items:
                return None
            decisions = [ItemDecision(item=i) for i in range(len(prune.items))]
            return self._pending.park(prune, decisions, run_id=outcome.run_id).plan_id

        outcome.plan_id = await asyncio.to_thread(propose)
        return outcome

    async def token_counter(self) -> TokenCounter:
        """What counts the token figures shown (``[tokens]``): a real tokenizer where one loads,
        else the estimate, labelled; loaded once (a rank file read or downloaded in a thread)."""
        from ovtui.llm.tokens import token_counter

        if self._tokens is None:
            self._tokens = await asyncio.to_thread(token_counter, self.config.tokens, self.root)
        return self._tokens

    def utility_results(self) -> UtilityRecord:
        """What ``utility`` measured, by experience name (``OvtuiError`` naming a damaged file)."""
        from ovtui.train.utility import read_utility

        return read_utility(self._paths)

    async def drift_check(
        self, dataset: str | None = None, split: str = "train", *, force: bool = False
    ) -> DriftCheck:
        """What drifted since each experience was learned (``ovtui.train.revalidation``), which
        experiences are affected (every one with ``force``) and their linked cases in ``split``:
        what ``revalidate`` would rerun, before any agent is called."""
        from ovtui.train.revalidation import DriftCheck, check_drift, linked_cases, recorded_setups

        dataset = dataset or self.config.trainer.dataset
        trials = self.config.trainer.eval_trials
        current = await self._loader.load()
        experiences = list(current.policies)
        kernel = self._kernel

        def read() -> tuple[dict[str, tuple[str, Setup]], dict[str, list[str]], Setup, CaseLoader]:
            recorded = recorded_setups(self._history(), [e.uri for e in experiences])
            linked = {e.uri: linked_cases(self._store, e) for e in experiences}
            return recorded, linked, kernel.setup(), kernel.case_loader(dataset, split, BATCH)

        recorded, linked, now, loader = await asyncio.to_thread(read)
        names = {c.name for c in await _all_cases(loader)}
        check = DriftCheck(dataset=dataset, split=split, trials=trials, setup=now, forced=force)
        return check_drift(check, experiences, recorded, linked, names)

    async def revalidate(
        self,
        check: DriftCheck,
        listeners: list[Listener] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> Revalidation:
        """Rerun the linked cases of ``check``'s affected experiences with the setup of now, and
        park each experience one of whose cases now fails as a stale item of one plan in Review
        (it proposes to deprecate it; nothing is written without a person). Nothing affected:
        nothing is run."""
        from ovtui.train.components.case_loader import ListCaseLoader
        from ovtui.train.components.trials import RepeatedCases
        from ovtui.train.revalidation import Revalidation, stale_experiences, stale_plan
        from ovtui.train.review.plans import ItemDecision

        result = Revalidation(check=check)
        if not check.cases:
            return result
        wanted = set(check.cases)
        async with self._run("revalidate", check.dataset, listeners, cancel) as (report, run):
            result.run_id = report.run_id
            batch = self.config.trainer.batch_size
            split = await _all_cases(self._kernel.case_loader(check.dataset, check.split, batch))
            chosen = ListCaseLoader([c for c in split if c.name in wanted], batch)
            policy_set = await self._loader.load()
            pipeline = self._kernel.pipeline(None, run, check.dataset, report)
            self._started(run, report, split=check.split, trials=check.trials, drifted=len(check.drift))
            cases = RepeatedCases(chosen, check.trials) if check.trials > 1 else chosen
            stage = (await pipeline.eval(cases, policy_set, stage="revalidate")).report
            report.stages.append(stage)
            result.results = stage.results
            result.stale = stale_experiences(check, stage.results, stage.evidence)
            if result.stale:
                current = {e.uri: e for e in policy_set.policies}
                plan = stale_plan(result.stale, current, check.setup)
                decisions = [ItemDecision(item=i) for i in range(len(plan.items))]
                parked = await asyncio.to_thread(self._pending.park, plan, decisions, report.run_id)
                result.plan_id = parked.plan_id
                run.events.emit("plan_pending", plan_id=parked.plan_id, items=len(plan.items), stale=True)
        return result

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

        approve = approve or self.config.review.policy
        dry_run = self.config.review.dry_run if dry_run is None else dry_run
        async with self._run("stream", INBOX_LABEL, listeners, None, steering) as (report, run):
            kernel = self._kernel
            validation = await asyncio.to_thread(kernel.stream_validation)
            engine = kernel.engine(
                run, approve=approve, dry_run=dry_run, wait_for_review=wait_for_review, validation=validation
            )
            name = self.config.trainer.stream_with
            trainer = kernel.trainer(name, engine, await self._loader.load())
            if not isinstance(trainer, StreamingTrainer):
                raise OvtuiError(f"[trainer] stream_with: trainer {name!r} cannot take rollouts one by one")
            inbox = InboxProcessor(self._paths, trainer.submit_rollout, run.events, kernel.evaluator_for)
            self._started(run, report, approve=approve, dry_run=dry_run)
            try:
                await inbox.watch(stop or asyncio.Event())
            finally:
                await trainer.close()
                await inbox.drain()
                report.inbox = {"processed": inbox.processed, "rejected": inbox.rejected_count}
                if inbox.rejected_count:
                    report.errors.append(f"{inbox.rejected_count} file(s) rejected")
        return report

    def dataset_names(self) -> list[str]:
        """The datasets a run may name, sorted: each folder of ``datasets/`` with a split file
        (``*.jsonl``) and each ``[datasets.NAME]`` of ovtui.toml."""
        names = set(self.config.datasets)
        with suppress(OSError):
            for folder in self._paths.datasets.iterdir():
                if folder.is_dir() and any(folder.glob("*.jsonl")):
                    names.add(folder.name)
        return sorted(names)

    # --- review: the plans that wait for a person -----------------------------------------------
    def pending_plans(self) -> list[PendingPlan]:
        """The plans waiting for review, oldest first (``unreadable_plans`` names those left out)."""
        return self._pending.list()

    def unreadable_plans(self) -> list[str]:
        """The plan files the last ``pending_plans`` could not read, as the workspace names them."""
        return [self._paths.relative(path) for path in self._pending.unreadable]

    def pending_plan(self, plan_id: str) -> PendingPlan:
        return self._pending.get(plan_id)

    def resolve_plan(self, ref: str) -> str:
        """The id of the one waiting plan ``ref`` names (an id or a unique part of one)."""
        return self._pending.resolve(ref)

    def is_waiting(self, plan_id: str) -> bool:
        return self._pending.is_waiting(plan_id)

    def refresh_stale(self) -> list[str]:
        """Mark the items whose target file changed since planning; the plans that changed."""
        return self._pending.refresh_stale(self.experiences())

    def planned_uri(self, item: PolicyPlanItem) -> str | None:
        """The file an item writes: its own URI, or for a new memory planned by name (a session's
        profile, preference or entity, a peer's included) where the apply will put it; None when
        that is not known yet (a name that carries the time of the apply) or cannot be a file."""
        if item.target_uri:
            return item.target_uri
        from ovtui.memory.targets import plan_target

        try:
            if self._store.registry.get(item.memory_type).timestamped:
                return None
            return plan_target(self._store, item).uri
        except (OvtuiError, OSError):
            return None

    def unread_lines(self, content: str) -> list[str]:
        """What in an experience's text the configured agent would not act on, one note a line."""
        from ovtui.train.review.gates.readability import unread_notes

        return [note for _, note in unread_notes(self._kernel.experience_reader(), content)]

    @property
    def reviewer(self) -> str:
        """Who decides in this process: ``[review] reviewer``, else the OS login."""
        return self.config.review.reviewer or login_name()

    def approvals_line(self, plan: PendingPlan, index: int) -> str:
        """``1 of 2 approvals (ana)`` for an item that needs two reviewers, else ``""``."""
        from ovtui.train.review.policy import approvals_needed

        needed = approvals_needed(plan.plan.items[index], self.config.review.second_approver_for)
        return plan.decisions[index].approvals_line(needed)

    def decide(
        self, plan_id: str, item: int, decision: Decision, note: str = "", *, reviewer: str | None = None
    ) -> PendingPlan:
        return self._pending.decide(plan_id, item, decision, note, reviewer=reviewer or self.reviewer)

    def decide_items(
        self,
        plan_id: str,
        items: list[int] | None,
        decision: Decision,
        note: str = "",
        *,
        reviewer: str | None = None,
        hunks: list[int] | None = None,
    ) -> PendingPlan:
        """Decide ``items`` (None: every undecided one) of a plan at once, as ``reviewer`` (by
        default ``self.reviewer``); ``hunks``: approve only these hunks of their content."""
        who = reviewer or self.reviewer
        return self._pending.decide_items(plan_id, items, decision, note, reviewer=who, hunks=hunks)

    def decide_all(
        self, plan_id: str, decision: Decision, note: str = "", *, reviewer: str | None = None
    ) -> PendingPlan:
        return self._pending.decide_all(plan_id, decision, note, reviewer=reviewer or self.reviewer)

    def edit_item(self, plan_id: str, item: int, content: str, *, reviewer: str | None = None) -> PendingPlan:
        """A reviewer's own text for an item: what the apply will write instead of the proposal,
        checked as a proposal is (hidden text, secrets, contradictions with the experiences)."""
        who = reviewer or self.reviewer
        return self._pending.edit_after(plan_id, item, content, reviewer=who, policy_set=self.experiences())

    def choose_standing(self, plan_id: str, item: int, contradiction: int, stands: Stands) -> PendingPlan:
        """Which line of an item's contradiction stands: ``this`` (the item's), ``other`` (the
        other experience's: the item's line is taken out) or ``both``; never decided automatically."""
        return self._pending.choose_standing(plan_id, item, contradiction, stands)

    async def apply_pending(self, plan_id: str, *, dry_run: bool = False) -> PolicyApplyResult:
        """Apply a reviewed plan: the same path as ``--approve all``, so files and records match.

        A plan whose approved items were all refused as stale stays waiting (marked stale) so it can
        be re-planned; when only some were, the plan is settled and those items wait as
        ``<plan_id>-stale``. ``describe_apply`` says which happened. The plan is claimed for the
        whole apply, so it is applied once however many processes try; the others get
        ``PlanSettledError`` saying who applied it."""
        from ovtui.train.review.gates.contradictions import unsettled_contradictions
        from ovtui.train.review.plans import apply_reviewed, evidence_for, stale_subplan
        from ovtui.train.review.policy import missing_approvals

        async with self._pending.claimed([plan_id]) as claim:
            # Under the plan's lock from here: a second apply (any process) waits, then finds it settled.
            [pending] = claim.plans
            if not dry_run:
                await asyncio.to_thread(claim.settle_if_recorded, pending)
            short = missing_approvals(pending, self.config.review.second_approver_for)
            if short:
                raise OvtuiError(f"plan {plan_id}: " + "; ".join(short))
            if pending.undecided:
                raise OvtuiError(f"plan {plan_id} still has {pending.undecided} undecided item(s)")
            unsettled_contradictions(pending)
            result, chosen = await apply_reviewed(
                self._kernel.updater(dry_run), pending.plan, pending.decisions, await self._loader.load()
            )
            if dry_run:
                return result
            stale = [chosen[i] for i in result.stale_items if i < len(chosen)]
            if stale and not (result.written_uris or result.deleted_uris):
                await asyncio.to_thread(claim.mark_stale, pending, stale)
                return result
            await asyncio.to_thread(claim.settle, pending, "applied", result.history_id)
        if stale:
            subplan = stale_subplan(pending.plan, stale)
            evidence = evidence_for(subplan, pending.evidence)
            parked = await asyncio.to_thread(self._pending.park_stale, subplan, pending.run_id, evidence)
            result.metadata["stale_plan"] = parked.plan_id
        return result

    def discard_pending(self, plan_id: str) -> None:
        self._pending.settle(self._pending.get(plan_id), "discarded", None)

    async def replan(self, plan_ids: list[str], listeners: list[Listener] | None = None) -> ReplanResult:
        """Re-plan waiting plans against the current experiences, as one fresh plan."""
        from ovtui.core.context import RunContext
        from ovtui.core.events import EventBus
        from ovtui.train.review.replan import replan

        run = RunContext(events=EventBus(listeners))
        engine = self._kernel.engine(run, approve="ask", dry_run=False, wait_for_review=False)
        return await replan(engine, self._pending, plan_ids, await self._loader.load())

    async def replan_stale(self, listeners: list[Listener] | None = None) -> ReplanResult | None:
        """Re-plan every waiting plan that has a stale item, in one action (None: none is stale)."""
        from ovtui.train.review.replan import stale_plan_ids

        policy_set = await self._loader.load()
        plan_ids = await asyncio.to_thread(stale_plan_ids, self._pending, policy_set)
        return await self.replan(plan_ids, listeners) if plan_ids else None

    # --- history: what changed memory, and undoing it ---------------------------------------------
    def history(
        self,
        *,
        kind: str | None = None,
        uri: str | None = None,
        text: str | None = None,
        limit: int | None = None,
    ) -> list[HistoryEntry]:
        """The history records, newest first, filtered by kind, a touched URI and a text."""

        return self._history().list(kind=kind, uri=uri, text=text, limit=limit)

    def newest_history(self, count: int) -> list[HistoryEntry]:
        """The newest ``count`` records, from the index's last lines (quick on any history)."""

        return self._history().newest(count)

    def resolve_record(self, ref: str) -> str:
        """The id of the one record ``ref`` names (an id or a unique part of one)."""

        return self._history().resolve(ref)

    def history_record(self, record_id: str) -> MemoryDiff:

        return self._history().get(record_id)

    async def revert(self, ref: str, *, dry_run: bool = False, force: bool = False) -> RevertResult:
        """Apply the inverse of a record (an id or a unique part of one); it gets its own record.
        Files changed after the record make it refuse (``RevertConflictError``) unless ``force``."""
        from ovtui.memory.revert import arevert

        return await arevert(self._store, ref, dry_run=dry_run, force=force)

    # --- memories: what the workspace holds --------------------------------------------------------
    def experiences(self, previous: ExperienceSet | None = None) -> ExperienceSet:
        """The experiences as they are; given the last snapshot, only files changed since are read."""
        return self._loader.load_sync(previous)

    def policy(self, ref: str, current: ExperienceSet | None = None) -> NamedPolicy:
        """A policy to compare: ``current``, a history record (the experiences right after it) or a
        folder of experience files; built in memory, nothing written."""
        from ovtui.memory.policy_at import named_policy

        return named_policy(self._store, ref, current if current is not None else self.experiences())

    def unparsed_experiences(self, at_least: int) -> dict[str, float] | None:
        """The experience files by URI, with when each changed, when at least ``at_least`` of them
        were never read by ovtui (a folder copied in): the names can show before the files are read."""
        return self._loader.unparsed(at_least)

    def first_experiences(self, count: int) -> list[Experience]:
        """The first ``count`` experiences, read quickly for a first screenful."""
        return self._loader.first(count)

    def memory_types(self) -> list[str]:
        """The declared memory types, experiences first, then by name."""
        return self._store.registry.browse_order()

    def memories(self, memory_type: str) -> MemoryListing:
        """Every file of a type: the user's, then each peer's (for a type that peers may hold)."""
        schema = self._store.registry.get(memory_type)
        listing = MemoryListing()
        for peer in [None, *self._store.peers()] if schema.peer_enabled else [None]:
            try:
                report = self._store.load_type(memory_type, peer)
            except OvtuiError as exc:
                if peer is None:
                    raise
                listing.problems.append(str(exc))  # a peer's folder leading outside: the others still show
                continue
            whose = f" · peer {peer}" if peer else ""
            for memory in report.files:
                name = schema.name_of(memory.fields, self._paths.relative_of(memory.uri or ""))
                listing.files.append((name + whose, memory))
            listing.problems += [str(p) for p in report.problems]
        return listing

    def memory(self, uri: str) -> MemoryFile | None:
        """One memory file by URI (None: no such file)."""
        return self._store.read_uri(uri)

    async def edit_memory(self, memory_type: str, uri: str, content: str) -> PolicyApplyResult:
        """A person's own text for one memory file's body, written like any apply (compare-and-swap
        on the version they edited, journaled) and recorded in History as an ``edit``."""
        from ovtui.core.context import ApplyOptions
        from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
        from ovtui.storage.paths import split_peer

        current = await asyncio.to_thread(self._store.read_uri, uri)
        if current is None:
            raise OvtuiError(f"{self.display_path(uri)}: no such memory file (moved or deleted?)")
        schema = self._store.registry.get(memory_type)
        rel = self._paths.relative_of(uri)
        peer, inner = split_peer(rel)
        item = PolicyPlanItem(
            kind="upsert",
            memory_type=memory_type,
            target_name=schema.name_of(current.fields, inner) if schema.name_field else memory_type,
            target_uri=uri,
            after_content=content,
            before_content=current.content,
            base_version=current.version,
            metadata={"rationale": "edited by a person in $EDITOR"},
            peer_id=peer,
        )
        options = ApplyOptions(kind="edit", purpose="edit in $EDITOR")
        return await self._kernel.updater(False).apply(PolicyUpdatePlan(items=[item]), None, options)

    def modified_times(self, memory_type: str) -> dict[str, float]:
        """When each file right in a type's folder last changed, by URI: one directory scan instead
        of a checked path and a stat per file (10,000 of those took a third of a second)."""
        prefix = self._store.type_uri(memory_type) + "/"
        found: dict[str, float] = {}
        with suppress(OSError), os.scandir(self._store.type_dir(memory_type)) as entries:
            for entry in entries:
                with suppress(OSError):
                    found[prefix + entry.name] = entry.stat().st_mtime
        return found

    def experience_times(self, policy_set: ExperienceSet) -> dict[str, float]:
        """``modified_times`` of the experiences as a snapshot's own scan found them (no new scan)."""
        from ovtui.train.components.experience_set_loader import file_times

        return file_times(policy_set)

    def modified_time(self, uri: str) -> float | None:
        """When one memory file last changed (None: it cannot be read)."""
        try:
            return self._paths.path_for(uri).stat().st_mtime
        except (OvtuiError, OSError):
            return None

    # --- the use ledger: what each memory was used by, and how it went -----------------------------
    @cached_property
    def _ledger(self) -> UseLedger:
        from ovtui.memory.ledger import UseLedger

        return UseLedger(self._paths)

    def memory_uses(self) -> dict[str, Usage]:
        """Each memory's uses, consumers and outcomes, by URI; ``OvtuiError`` naming the file when
        the ledger cannot be read."""
        return self._ledger.usage()

    def memory_use(self, uri: str) -> Usage | None:
        """One memory's record (None: never used); ``OvtuiError`` as ``memory_uses``."""
        return self._ledger.usage_of(uri)

    def memory_fed(self, uri: str) -> list[Fed]:
        """The newest results a memory fed (the trajectories among them), newest first."""
        return self._ledger.fed(uri)

    def record_uses(self, consumer: str | None, uris: Sequence[str], via: Via) -> None:
        """The memories served to session ``consumer`` (a find, a search, a read, an MCP call): a
        use each, with the version of each experience as it is now, linked to the session's outcome
        when it is committed. A use without a consumer (a find no session asked for) is not one. A
        ledger that cannot be written is logged, naming the file; serving goes on. File work: call
        it in a thread."""
        if not consumer or not uris:
            return
        from ovtui.memory.experience_uris import owned_experience_uri
        from ovtui.memory.ledger_state import Use, session_consumer

        who = session_consumer(consumer)
        uses = []
        for uri in uris:
            version = None
            if owned_experience_uri(uri, self._paths.user) is not None:  # what Review asks about
                with suppress(OvtuiError, OSError):
                    memory = self._store.read_uri(uri)
                    version = memory.version if memory is not None else None
            uses.append(Use(uri, who, via, version))
        self._ledger.try_record(uses)

    def display_path(self, uri: str | None) -> str:
        """A URI as a workspace-relative path (never a tmp or home path on screen)."""
        if not uri:
            return ""
        prefix = self._paths.uri_prefix
        return uri[len(prefix) :] if uri.startswith(prefix) else uri

    def path_for(self, uri: str) -> Path:
        """Where a memory's file is on disk (to print for the person to open)."""
        return self._paths.path_for(uri)

    def report_path(self, run_id: str) -> Path:
        """Where a run's report is saved."""
        return self._paths.runs / run_id / REPORT_FILE

    def run_report(self, ref: str | None = None) -> RunReport:
        """A saved run's report: ``ref`` a run id or a unique part of one, None the latest run."""
        from ovtui.core.bounds import MAX_MEMORY_FILE_BYTES
        from ovtui.storage.reading import read_bounded
        from ovtui.train.reports import RunReport

        runs = self._paths.runs
        ids: list[str] = []
        with suppress(OSError), os.scandir(runs) as entries:
            ids = sorted(e.name for e in entries if (runs / e.name / REPORT_FILE).is_file())
        if ref is not None:  # only matched against the folder names: never a path itself
            ids = [i for i in ids if ref in i]
            if len(ids) != 1:
                found = "no run" if not ids else f"{len(ids)} runs ({', '.join(ids[:3])})"
                raise OvtuiError(f"run {ref!r}: {found} with a report matches it under runs/")
        if not ids:
            raise OvtuiError("no run with a report under runs/ yet: run `ovtui train`, `eval` or `compare`")
        path = self.report_path(ids[-1])
        data = read_bounded(
            path, 16 * MAX_MEMORY_FILE_BYTES, what="a run report", shown=self.display_file(path)
        )
        try:
            return RunReport.model_validate_json(data)
        except ValueError as exc:
            raise OvtuiError(f"{self.display_file(path)}: not a run report ({_first_line(exc)})") from None

    def display_file(self, path: Path) -> str:
        """A file of the workspace by its workspace-relative path."""
        return self._paths.relative(path)

    def html_report(self, report: RunReport) -> str:
        """A run's report as one self-contained HTML page (inline SVG, no script, no network)."""
        from ovtui.train.html_report import render_html

        return render_html(report, self.config.evaluation.k)

    def watch(
        self, *, stop: asyncio.Event | None = None, ready: asyncio.Event | None = None, **timing: int
    ) -> AsyncIterator[WorkspaceChanges]:
        """Classified bursts of changes to the workspace's files until ``stop`` is set."""
        from ovtui.storage.watching import watch_workspace

        return watch_workspace(self._paths, stop=stop, ready=ready, **timing)

    def save_theme(self, theme: str) -> None:
        """Remember the app's theme in ovtui.toml (``OSError`` when it cannot be written)."""
        if self.config.ui.theme == theme:
            return
        self.config.ui.theme = theme
        save_config(self.root, self.config)

    # --- sessions: conversations committed to the workspace -----------------------------------------
    def session_views(self) -> list[SessionView]:
        """Every session with its commits, the most recently active first."""
        from ovtui.sessions.overview import session_views

        return session_views(self._paths, frozenset(p.plan_id for p in self.pending_plans()))

    def session_store(self, on_wait: Any = None) -> SessionStore:
        """The sessions' files; ``on_wait(session_id)`` hears when another process holds one."""
        from ovtui.sessions.store import SessionStore

        return SessionStore(self._paths, on_wait=on_wait)

    def session_committer(self, sessions: SessionStore, run: RunContext) -> SessionCommitter:
        """The committer of this workspace's sessions (phase 2 of a commit: extract, train, record)."""
        return self._kernel.session_committer(sessions, run)

    def session_inbox(self, committer: SessionCommitter, events: EventBus) -> SessionInbox:
        """``inbox/sessions/``: each conversation file dropped there committed by ``committer``."""
        from ovtui.sessions.inbox import SessionInbox

        return SessionInbox(self._paths, committer, events)

    def session_tasks(self, folder: Path | None = None, *, prefix: str) -> JobStore:
        """The job store of commits running in the background (its folder: under the state)."""
        from ovtui.sessions.overview import TASKS_DIR
        from ovtui.storage.jobs import JobStore

        return JobStore(folder or self._paths.state / TASKS_DIR, prefix=prefix)

    def event_log(self, run_id: str) -> EventLog:
        """A listener writing a run's events to its log under ``runs/``."""
        from ovtui.storage.event_log import EventLog

        return EventLog(self._paths, run_id)

    async def commit(self, path: Path, session_id: str | None = None) -> CommitOutcome:
        """Commit a conversation file (a message per line) as session ``session_id`` (default: the
        file's name), the way the session API commits one: archived, extracted, trained, recorded."""
        from ovtui.core.context import RunContext
        from ovtui.core.events import EventBus
        from ovtui.sessions.inbox import commit_messages, read_conversation, session_of

        sessions = self.session_store()
        session = session_of(path, session_id)
        messages = await asyncio.to_thread(read_conversation, path, sessions)
        committer = self.session_committer(sessions, RunContext(None, EventBus(), asyncio.Event()))
        try:
            return await commit_messages(committer, session, messages)
        finally:
            await committer.close()

    # --- retrieval: what an agent reads back (find, search, read, ls; a session's context) ----------
    @cached_property
    def _retrieval(self) -> Retrieval:
        from ovtui.memory.hotness import HotnessMix
        from ovtui.memory.retrieval.ranking import Fusion
        from ovtui.memory.retrieval.service import Retrieval

        cfg, embedding = self.config.retrieval, self.config.embedding
        embedder = None
        if embedding is not None:
            from ovtui.llm.embeddings import OpenAIEmbedder

            embedder = OpenAIEmbedder(embedding)
        hot = HotnessMix(self._ledger, cfg.hotness_weight, cfg.hotness_half_life_days)
        offline = self.config.llm.backend == "offline"
        return Retrieval(
            self._store,
            embedder=embedder,
            fusion=Fusion(embedding.weight, embedding.fusion) if embedding is not None else None,
            mix=hot.mixed if hot.weight > 0 else None,
            summarize=None if offline else self._summarize,
            summary_model=f"{self.config.llm.base_url}\n{self.config.llm.model}",
        )

    async def _summarize(self, kind: SummaryKind, text: str) -> str:
        from ovtui.memory.retrieval.service import SUMMARY_PROMPTS

        messages = [{"role": "system", "content": SUMMARY_PROMPTS[kind]}, {"role": "user", "content": text}]
        answer, _ = await self._kernel.llm_client().complete_text("retrieval_summary", messages)
        return answer

    def visibility(self, session_id: str | None = None, actor_peer: str | None = None) -> Visibility:
        """What a caller sees: its user's space, and the peers the session's MemoryPolicy allows
        (with ``actor_peer``, that one only if allowed), or with ``actor_peer`` alone that peer;
        otherwise no peer. An unknown session allows none."""
        from ovtui.memory.retrieval.access import Visibility
        from ovtui.protocols.sessions import check_peer_id
        from ovtui.sessions.store import SessionError

        user = self._paths.user
        try:
            actor = check_peer_id(actor_peer)
        except ValueError as exc:
            from ovtui.memory.retrieval.access import invalid_argument

            raise invalid_argument(f"X-OpenViking-Actor-Peer: {exc}") from None
        if session_id is None:
            return Visibility(user, frozenset({actor}) if actor else frozenset())
        try:
            policy = self.session_store().meta(session_id).policy()
        except SessionError:
            return Visibility(user)
        if not policy.peer.enabled:
            return Visibility(user)
        if actor is not None:
            return Visibility(user, frozenset({actor}) if policy.allows_peer(actor) else frozenset())
        allowed = policy.peer.allowed_peer_ids
        return Visibility(user, every_peer=True) if allowed is None else Visibility(user, frozenset(allowed))

    async def find(
        self, query: FindQuery, visibility: Visibility, consumer: str | None = None
    ) -> list[Found]:
        """The memories most relevant to ``query`` the caller may see; a consumer's are recorded."""
        found = await self._retrieval.find(query, visibility)
        if consumer and found:  # a use is recorded for a consumer only: no thread trip without one
            await asyncio.to_thread(self.record_uses, consumer, [f.doc.uri for f in found], "find")
        return found

    async def search(
        self, query: FindQuery, visibility: Visibility, session_id: str | None, *, via: Via = "search"
    ) -> list[Found]:
        """``find`` for a session: its recent user messages shape the ranking; the hits are
        recorded as served to it (``via``: the route or tool that served them)."""
        from dataclasses import replace

        context = await asyncio.to_thread(self._recent_user_text, session_id) if session_id else ""
        found = await self._retrieval.find(replace(query, context=context), visibility)
        if session_id and found:
            await asyncio.to_thread(self.record_uses, session_id, [f.doc.uri for f in found], via)
        return found

    def _recent_user_text(self, session_id: str) -> str:
        from ovtui.sessions.store import SessionError

        sessions = self.session_store()
        try:
            messages = sessions.messages(session_id) if sessions.exists(session_id) else []
        except SessionError:
            return ""
        said = [m.text for m in messages if m.role == "user" and m.text.strip()]
        return "\n".join(said[-RECENT_USER_MESSAGES:])

    async def read(
        self,
        uri: str,
        visibility: Visibility,
        *,
        offset: int = 0,
        limit: int = -1,
        raw: bool = False,
        consumer: str | None = None,
        via: Via = "read",
    ) -> str:
        """A file's text (a memory without its MEMORY_FIELDS trailer unless ``raw``; a session's
        messages, an archive's memory_diff.json), ``limit`` lines from line ``offset``; a memory
        read for ``consumer`` is recorded as served to it."""
        located, text = await self._retrieval.read(uri, visibility, offset=offset, limit=limit, raw=raw)
        if located.is_memory and consumer:
            await asyncio.to_thread(self.record_uses, consumer, [located.uri], via)
        return text

    async def abstract(self, uri: str, visibility: Visibility) -> str:
        return await self._retrieval.summary(uri, visibility, "abstract")

    async def overview(self, uri: str, visibility: Visibility) -> str:
        return await self._retrieval.summary(uri, visibility, "overview")

    async def ls(self, uri: str, visibility: Visibility, options: ListOptions) -> tuple[list[Any], bool]:
        """A folder's entries (``options.recursive``: the tree below it) and whether more follow."""
        return await self._retrieval.listing(uri, visibility, options)

    async def stat(self, uri: str, visibility: Visibility) -> dict[str, Any]:
        return await self._retrieval.stat(uri, visibility)

    async def session_context(self, session_id: str, token_budget: int) -> dict[str, Any]:
        from ovtui.sessions.context import session_context

        return await asyncio.to_thread(session_context, self.session_store(), session_id, token_budget)

    async def session_archive(self, session_id: str, archive_id: str) -> dict[str, Any]:
        from ovtui.sessions.context import session_archive

        return await asyncio.to_thread(session_archive, self.session_store(), session_id, archive_id)

    async def delete_session(self, session_id: str) -> None:
        from ovtui.sessions.context import delete_session

        await asyncio.to_thread(delete_session, self.session_store(), session_id)
