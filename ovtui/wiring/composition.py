"""The one builder: every part of one workspace is constructed here, and each shared part once.

Shared parts (made on first need, then kept): the pending plans, the experience loader, the use
ledger, the history store, the retrieval index, the session store, the LLM client, the
environments, the reviewers' feedback. Per-run parts (an engine, a pipeline, a trainer, case
loaders) are assembled here from those, by the names ``ovtui.toml`` gives (``ovtui.wiring.registry``).
The builder is also what a plug-in's factory is handed: it implements ``Resources``.

Nothing heavy is imported at module level: a workspace opened to read its history builds the
store and the history and never loads the engine.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from ovtui.core.errors import OvtuiError
from ovtui.wiring.registry import (
    BACKENDS,
    ENVIRONMENTS,
    TRAINERS,
    agent,
    agent_origin,
    agent_reader,
    case_source,
)

if TYPE_CHECKING:
    from pathlib import Path

    from ovtui.core.config import OvtuiConfig
    from ovtui.core.context import RunContext
    from ovtui.core.decisions import RejectionSource
    from ovtui.core.domain import Case, ExperienceSet
    from ovtui.core.events import EventBus
    from ovtui.core.interfaces import (
        CaseLoader,
        ExperienceReader,
        PolicyTrainer,
        PolicyUpdater,
        RolloutEvaluator,
        RolloutExecutor,
    )
    from ovtui.llm.client import LLMClient
    from ovtui.llm.tokens import TokenCounter
    from ovtui.llm.usage import CallUsage
    from ovtui.memory.history import HistoryStore
    from ovtui.memory.hotness import HotnessMix
    from ovtui.memory.ledger import UseLedger
    from ovtui.memory.retrieval.service import Retrieval, SummaryKind
    from ovtui.memory.store import MemoryStore
    from ovtui.plugins.backends import Backends
    from ovtui.plugins.environment import Environment
    from ovtui.plugins.resources import Backend
    from ovtui.sessions.commit import SessionCommitter
    from ovtui.sessions.store import SessionStore
    from ovtui.storage.event_log import EventLog
    from ovtui.storage.jobs import JobStore
    from ovtui.train.components.experience_set_loader import ExperienceSetLoader
    from ovtui.train.engine import PolicyTrainingEngine
    from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline
    from ovtui.train.reports import RunReport
    from ovtui.train.revalidation import Setup
    from ovtui.train.review.gates.model_contradictions import ModelContradictionCheck
    from ovtui.train.review.gates.runner import GateRunner
    from ovtui.train.review.pending import PendingPlans


class Composition:
    def __init__(self, config: OvtuiConfig, store: MemoryStore) -> None:
        self.config = config
        self.store = store
        self.paths = store.paths
        self._llm: LLMClient | None = None
        self._environments: dict[str, Environment] = {}
        self._tokens: TokenCounter | None = None
        self.run_events: EventBus | None = None  # where the LLM client's usage goes during a run

    # --- the shared parts, each made once -----------------------------------------------------------
    @cached_property
    def pending(self) -> PendingPlans:
        from ovtui.train.review.pending import PendingPlans

        return PendingPlans(self.store, second_approver_for=self.config.review.second_approver_for)

    @cached_property
    def loader(self) -> ExperienceSetLoader:
        from ovtui.train.components.experience_set_loader import ExperienceSetLoader

        return ExperienceSetLoader(self.store)

    @cached_property
    def history(self) -> HistoryStore:
        from ovtui.memory.history import HistoryStore

        return HistoryStore(self.paths)

    @cached_property
    def _ledger(self) -> UseLedger:
        from ovtui.memory.ledger import UseLedger

        return UseLedger(self.paths)

    @cached_property
    def _feedback(self) -> RejectionSource:
        from ovtui.train.review.feedback import ReviewFeedback

        return ReviewFeedback(self.paths.root)

    @cached_property
    def sessions(self) -> SessionStore:
        from ovtui.sessions.store import SessionStore

        return SessionStore(self.paths)

    @cached_property
    def retrieval(self) -> Retrieval:
        from ovtui.memory.retrieval.ranking import Fusion
        from ovtui.memory.retrieval.service import Retrieval

        embedding, llm = self.config.embedding, self.config.llm
        embedder = None
        if embedding is not None:
            from ovtui.llm.embeddings import OpenAIEmbedder

            embedder = OpenAIEmbedder(embedding)
        hot = self.hotness()
        return Retrieval(
            self.store,
            embedder=embedder,
            fusion=Fusion(embedding.weight, embedding.fusion) if embedding is not None else None,
            mix=hot.mixed if hot.weight > 0 else None,
            summarize=self._summarize if self.backend().uses_model else None,
            summary_model=f"{llm.base_url}\n{llm.model}",
        )

    async def _summarize(self, kind: SummaryKind, text: str) -> str:
        from ovtui.memory.retrieval.service import SUMMARY_PROMPTS

        messages = [{"role": "system", "content": SUMMARY_PROMPTS[kind]}, {"role": "user", "content": text}]
        answer, _ = await self.llm().complete_text("retrieval_summary", messages)
        return answer

    def session_tasks(self, folder: Path | None = None, *, prefix: str) -> JobStore:
        """A job store of commits running in the background (by default under the state folder);
        each server keeps its own."""
        from ovtui.sessions.overview import TASKS_DIR
        from ovtui.storage.jobs import JobStore

        return JobStore(folder or self.paths.state / TASKS_DIR, prefix=prefix)

    def event_log(self, run_id: str) -> EventLog:
        """A listener writing a run's events to its log under ``runs/``."""
        from ovtui.storage.event_log import EventLog

        return EventLog(self.paths, run_id)

    async def token_counter(self) -> TokenCounter:
        """What counts the token figures shown (``[tokens]``): a real tokenizer where one loads,
        else the estimate, labelled; loaded once (a rank file read or downloaded in a thread)."""
        import asyncio

        from ovtui.llm.tokens import token_counter

        if self._tokens is None:
            self._tokens = await asyncio.to_thread(token_counter, self.config.tokens, self.paths.root)
        return self._tokens

    # --- Resources: what a plug-in's factory builds from --------------------------------------------
    def llm(self) -> LLMClient:
        """The workspace's one LLM client (``[llm]``), made on first use: offline runs never build it."""
        if self._llm is None:
            from ovtui.llm.capabilities import CapabilityMemory
            from ovtui.llm.client import LLMClient

            cache = self.paths.state / "llm_cache" if self.config.llm.cache else None
            memory = CapabilityMemory(self.paths.root)
            self._llm = LLMClient(
                self.config.llm, cache_dir=cache, on_call=self._report_usage, capability_memory=memory
            )
        return self._llm

    def forget_llm_client(self) -> None:
        """After the client was closed (``doctor`` closes the one it probed with): the next use gets
        a new one."""
        self._llm = None

    def environment(self, name: str | None = None) -> Environment:
        """The environment ``name`` — by default ``[trainer] environment``, the one the local
        datasets' cases are for (it validates and grades them) — built once."""
        name = name or self.config.trainer.environment
        if name not in self._environments:
            self._environments[name] = ENVIRONMENTS.get(name)(self.config)
        return self._environments[name]

    def ledger(self) -> UseLedger:
        """The workspace's one use ledger (it keeps what it read, so the next read folds only what
        was appended since)."""
        return self._ledger

    def review_feedback(self) -> RejectionSource:
        """What reviewers of this workspace turned down, for the learners: one reader for all."""
        return self._feedback

    def hotness(self) -> HotnessMix:
        """Where an agent records the memories it retrieves, and how much their hotness weighs."""
        from ovtui.memory.hotness import HotnessMix

        cfg = self.config.retrieval
        return HotnessMix(self._ledger, cfg.hotness_weight, cfg.hotness_half_life_days)

    def on_retry(self, url: str, attempt: int, attempts: int, reason: str) -> None:
        """Where a case source reports a failed try of its service (a run shows it while it connects)."""
        if self.run_events is not None:
            retry = {"url": url, "attempt": attempt, "attempts": attempts, "reason": reason}
            message = f"{url}: try {attempt} of {attempts} failed ({reason}); trying again"
            self.run_events.emit("log", message=message, level="warning", retry=retry)

    async def aclose(self) -> None:
        """Close the running loop's connections of the LLM client, the embedder and the environments."""
        from ovtui.plugins.environment import close_environment

        if self._llm is not None:
            await self._llm.aclose()
        if "retrieval" in self.__dict__:
            await self.retrieval.aclose()
        for environment in list(self._environments.values()):
            await close_environment(environment)

    def _report_usage(self, stage: str, usage: CallUsage, latency: float) -> None:
        if self.run_events is not None:
            self.run_events.emit("usage", **usage.to_event(), latency=latency)

    def usage(self) -> dict[str, dict[str, float | int]]:
        """What the LLM client's calls cost so far, by stage (nothing when no call was made)."""
        if self._llm is None:
            return {}
        return dict(self._llm.usage.snapshot())

    # --- the parts of a run, assembled from the shared ones ----------------------------------------
    def backend(self, name: str | None = None) -> Backend:
        """The backend ``name`` (default ``[llm] backend``), as it describes itself (nothing built)."""
        return BACKENDS.get(name or self.config.llm.backend)

    def backend_label(self) -> str:
        """The backend's label, and the model where it uses one (``offline``, ``llm:gpt-4o-mini``)."""
        backend = self.backend()
        return f"{backend.label}:{self.config.llm.model}" if backend.uses_model else backend.label

    @cached_property
    def _backends(self) -> Backends:
        return self.backend().build(self)

    def backends(self) -> Backends:
        """The backend's seams, built once."""
        return self._backends

    def updater(self, dry_run: bool) -> PolicyUpdater:
        from ovtui.train.components.policy_updater import DryRunPolicyUpdater, MemoryFilePolicyUpdater

        if dry_run:
            return DryRunPolicyUpdater(self.store)
        return MemoryFilePolicyUpdater(self.store, learned_against=self.setup)

    def setup(self) -> Setup:
        """What an experience applied now is learned against (``ovtui.train.revalidation``), read
        afresh each time: an environment's policy may be a file that changes under a long run."""
        from ovtui.plugins.environment import DescribesSetup
        from ovtui.train.revalidation import Setup, schema_hash, text_hash

        trainer = self.config.trainer
        try:
            environment: object = self.environment()
        except OvtuiError:
            # An environment that cannot be built here (its data not installed) must not stop a
            # person's apply: its policy and tools are then not said, so they never drift.
            environment = None
        described = environment if isinstance(environment, DescribesSetup) else None
        return Setup(
            environment=trainer.environment,
            policy_text=text_hash(described.policy_text()) if described else None,
            tool_schema=schema_hash(described.tool_schemas()) if described else None,
            model=self.config.llm.model if self.backend().uses_model else None,
            agent=agent_origin(trainer.agent),
            backend=self.backend().label,
        )

    def executor(self, dataset: str | None = None) -> RolloutExecutor:
        """Who runs the cases: the dataset's case source when it runs its own (a remote service),
        else ``[trainer] agent``."""
        if dataset is not None:
            own = case_source(self.config, dataset).executor(self, dataset)
            if own is not None:
                return own
        return agent(self.config.trainer.agent, self)

    def case_loader(self, dataset: str, split: str, batch_size: int, limit: int | None = None) -> CaseLoader:
        from ovtui.plugins.resources import CaseSelection

        selection = CaseSelection(dataset, split, batch_size, limit)
        return case_source(self.config, dataset).cases(self, selection)

    def eval_cases(self, dataset: str, split: str, batch_size: int, trials: int = 1) -> CaseLoader:
        """An eval split, each case run ``trials`` times."""
        cases = self.case_loader(dataset, split, batch_size)
        if trials == 1:
            return cases
        from ovtui.train.components.trials import RepeatedCases

        return RepeatedCases(cases, trials)

    def trainer(self, name: str, engine: PolicyTrainingEngine, policy_set: ExperienceSet) -> PolicyTrainer:
        return TRAINERS.get(name)(self, engine, policy_set)

    def engine(
        self,
        run: RunContext,
        *,
        approve: str,
        dry_run: bool,
        wait_for_review: bool,
        validation: list[Case] | None = None,
    ) -> PolicyTrainingEngine:
        from ovtui.core.interfaces import TrainingStages
        from ovtui.train.components.gradient_estimator import ExperienceGradientEstimator
        from ovtui.train.components.policy_optimizer import PatchMergePolicyOptimizer
        from ovtui.train.components.trajectory_analyzer import TrajectoryRolloutAnalyzer
        from ovtui.train.engine import PolicyTrainingEngine
        from ovtui.train.review.interfaces import Review
        from ovtui.train.review.policy import ReviewPolicy

        backends = self.backends()
        stages = TrainingStages(
            TrajectoryRolloutAnalyzer(self.store, backends.extractor),
            ExperienceGradientEstimator(self.store, backends.proposer),
            PatchMergePolicyOptimizer(self.store, backends.merger, self.review_feedback()),
            self.updater(dry_run),
        )
        policy = ReviewPolicy(
            approve, self.config.review.second_approver_for, gate_k=self.config.evaluation.k
        )
        return PolicyTrainingEngine(
            stages,
            self.loader,
            review=Review(policy, self.pending, wait_for_review),
            gates=self.gates(validation),
            run=run,
            concurrency=self.config.trainer.rollout_concurrency,
        )

    def gates(self, validation: list[Case] | None) -> GateRunner:
        """The gates a plan passes before review, in this order: the evidence of each item, the
        lines the agent cannot read (an agent that reads by rules), leaked case values,
        contradictions (offline, then the model's when configured), hazards, and validation on
        held-out cases (when there are some)."""
        from ovtui.train.review.gates.base import Gate
        from ovtui.train.review.gates.contradictions import ContradictionGate
        from ovtui.train.review.gates.evidence import EvidenceGate
        from ovtui.train.review.gates.leaks import LeakGate
        from ovtui.train.review.gates.readability import ReadabilityGate
        from ovtui.train.review.gates.runner import GateRunner
        from ovtui.train.review.gates.sanitizer import SanitizerGate
        from ovtui.train.review.gates.validation import ValidationGate

        # Built in the order the parts always were: the first that cannot be built names the error.
        validating = ValidationGate(validation, self.executor()) if validation else None
        reader = self.experience_reader()
        model_check = self.contradiction_check()
        gates: list[Gate] = [EvidenceGate()]
        if reader is not None:
            gates.append(ReadabilityGate(reader))
        gates += [LeakGate(), ContradictionGate()]
        if model_check is not None:
            gates.append(model_check)
        gates.append(SanitizerGate())
        if validating is not None:
            gates.append(validating)
        return GateRunner(gates)

    def contradiction_check(self) -> ModelContradictionCheck | None:
        """The model's contradiction check when ``[review] model_contradictions`` asks for it (by
        default: when the backend's learner is a model; a model-free one calls none)."""
        from ovtui.train.review.gates.model_contradictions import ModelContradictionCheck

        wanted = self.config.review.model_contradictions
        if wanted is None:
            wanted = self.backend().uses_model
        return ModelContradictionCheck(self.llm()) if wanted else None

    def experience_reader(self) -> ExperienceReader | None:
        """How ``[trainer] agent`` reads experiences (None: it reads anything), for Review's notes."""
        return agent_reader(self.config.trainer.agent, self.environment)

    def session_committer(self, run: RunContext) -> SessionCommitter:
        """The committer of this workspace's sessions: its backend's session extractor, and the
        ``[sessions] train_with`` trainer around an engine of ``run`` for the commits' cases."""
        from ovtui.core.interfaces import StreamingTrainer
        from ovtui.sessions.commit import SessionCommitter, SessionTraining

        async def training() -> SessionTraining:
            review, name = self.config.review, self.config.sessions.train_with
            engine = self.engine(run, approve=review.policy, dry_run=review.dry_run, wait_for_review=False)
            trainer = self.trainer(name, engine, await self.loader.load())
            if not isinstance(trainer, StreamingTrainer):
                raise OvtuiError(f"[sessions] train_with: trainer {name!r} cannot take rollouts one by one")
            return SessionTraining(trainer, engine.analyzer)

        return SessionCommitter(
            self.store,
            self.pending,
            self.sessions,
            run,
            extractor=lambda: self.backends().session_extractor,
            training=training,
            settings=self.config.sessions,
            ledger=self._ledger,
        )

    def validation_cases(self, dataset: str, train_cases: CaseLoader | None, batch: int) -> list[Case]:
        """Held-out cases for the gate: ``validation.jsonl`` if the dataset has one, else a stable
        ``[trainer] validation`` share of the train split, which is then not trained on (streaming,
        which trains on the inbox, passes the train split itself)."""
        from ovtui.train.components.case_loader import ListCaseLoader
        from ovtui.train.review.gates.validation import split_validation

        if (self.paths.datasets / dataset / "validation.jsonl").exists():
            loader = self.case_loader(dataset, "validation", batch)
            return list(loader.cases) if isinstance(loader, ListCaseLoader) else []
        if self.config.trainer.validation <= 0 or not isinstance(train_cases, ListCaseLoader):
            return []
        train_cases.cases, held_out = split_validation(train_cases.cases, self.config.trainer.validation)
        return held_out

    def stream_validation(self) -> list[Case]:
        dataset, batch = self.config.trainer.dataset, self.config.trainer.batch_size
        try:
            return self.validation_cases(dataset, self.case_loader(dataset, "train", batch), batch)
        except OvtuiError:
            return []  # no dataset to validate against: the gate parks plans for the person

    def evaluator_for(self, case: Case) -> RolloutEvaluator | None:
        """The evaluator that can grade ``case`` (for inbox rollouts that come without one): the
        environment of the local datasets (``[trainer] environment``), when it grades such a case."""
        environment = self.environment()
        return environment if environment.can_grade(case) else None

    def pipeline(
        self,
        trainer: PolicyTrainer | None,
        run: RunContext,
        dataset: str,
        report: RunReport,
        *,
        record_outcomes: bool = True,
    ) -> OfflinePolicyOptimizationPipeline:
        """``record_outcomes`` False: graded rollouts are not linked in the use ledger (a compare
        runs policies that are not the workspace's: their outcomes are not its memories')."""
        from ovtui.train.components.snapshotter import ContentHashPolicySnapshotter
        from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline

        executor = self.executor(dataset)
        # A remote executor's per-service counts are the report's (the same Counter, filled live).
        report.services = getattr(executor, "counts", report.services)
        ledger = self._ledger if record_outcomes else None
        return OfflinePolicyOptimizationPipeline(
            ContentHashPolicySnapshotter(), executor, trainer, self.loader, run, ledger
        )
