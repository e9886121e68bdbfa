"""The composition root: the kernel's components for one workspace, each looked up by name in
``ovtui.wiring.registry`` (from ovtui.toml) and assembled here, and nowhere else.

Only the ``Workspace`` facade builds one, when a use case first needs the kernel (the history and
the other read models never do, so ``ovtui history`` loads none of this). The facade's callers see
use cases, never these builders.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ovtui.core.errors import OvtuiError
from ovtui.core.interfaces import (
    CaseLoader,
    ExperienceReader,
    PolicyTrainer,
    PolicyUpdater,
    RolloutEvaluator,
    RolloutExecutor,
    StreamingTrainer,
    TrainingStages,
)
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.train.components.gradient_estimator import ExperienceGradientEstimator
from ovtui.train.components.policy_optimizer import PatchMergePolicyOptimizer
from ovtui.train.components.snapshotter import ContentHashPolicySnapshotter
from ovtui.train.components.trajectory_analyzer import TrajectoryRolloutAnalyzer
from ovtui.train.engine import PolicyTrainingEngine
from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline
from ovtui.train.review.gates.base import Gate
from ovtui.train.review.gates.contradictions import ContradictionGate
from ovtui.train.review.gates.evidence import EvidenceGate
from ovtui.train.review.gates.leaks import LeakGate
from ovtui.train.review.gates.model_contradictions import ModelContradictionCheck
from ovtui.train.review.gates.readability import ReadabilityGate
from ovtui.train.review.gates.runner import GateRunner
from ovtui.train.review.gates.sanitizer import SanitizerGate
from ovtui.train.review.gates.validation import ValidationGate, split_validation
from ovtui.train.review.interfaces import Review
from ovtui.train.review.policy import ReviewPolicy
from ovtui.wiring.registry import (
    BACKENDS,
    TRAINERS,
    CaseSelection,
    Resources,
    agent,
    agent_origin,
    agent_reader,
    case_source,
)

if TYPE_CHECKING:
    from ovtui.core.config import OvtuiConfig
    from ovtui.core.context import RunContext
    from ovtui.core.domain import Case, ExperienceSet
    from ovtui.core.events import EventBus
    from ovtui.llm.client import LLMClient
    from ovtui.llm.usage import CallUsage
    from ovtui.memory.store import MemoryStore
    from ovtui.sessions.commit import SessionCommitter
    from ovtui.sessions.store import SessionStore
    from ovtui.train.backends.session_extraction import SessionExtractor
    from ovtui.train.components.experience_set_loader import ExperienceSetLoader
    from ovtui.train.reports import RunReport
    from ovtui.train.revalidation import Setup
    from ovtui.train.review.pending import PendingPlans


class Composition:
    def __init__(
        self, config: OvtuiConfig, store: MemoryStore, pending: PendingPlans, loader: ExperienceSetLoader
    ) -> None:
        self.config = config
        self.store = store
        self.paths = store.paths
        self.pending = pending
        self.loader = loader
        self._llm: LLMClient | None = None
        self.run_events: EventBus | None = None  # where the LLM client's usage goes during a run
        self.resources = Resources(self.config, self.paths, self.store, self.llm_client, self._report_retry)

    def llm_client(self) -> LLMClient:
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
        """After the client was closed (``doctor`` closes the one it probed with): the next use
        case gets a new one."""
        self._llm = None

    async def aclose(self) -> None:
        """Close the running loop's connections of the LLM client and of the environments built."""
        if self._llm is not None:
            await self._llm.aclose()
        await self.resources.aclose()

    def _report_usage(self, stage: str, usage: CallUsage, latency: float) -> None:
        if self.run_events is not None:
            self.run_events.emit("usage", **usage.to_event(), latency=latency)

    def _report_retry(self, url: str, attempt: int, attempts: int, reason: str) -> None:
        if self.run_events is not None:
            retry = {"url": url, "attempt": attempt, "attempts": attempts, "reason": reason}
            message = f"{url}: try {attempt} of {attempts} failed ({reason}); trying again"
            self.run_events.emit("log", message=message, level="warning", retry=retry)

    def usage(self) -> dict[str, dict[str, float | int]]:
        """What the LLM client's calls cost so far, by stage (nothing when no call was made)."""
        if self._llm is None:
            return {}
        return dict(self._llm.usage.snapshot())

    def updater(self, dry_run: bool) -> PolicyUpdater:
        from ovtui.train.components.policy_updater import DryRunPolicyUpdater, MemoryFilePolicyUpdater

        if dry_run:
            return DryRunPolicyUpdater(self.store)
        return MemoryFilePolicyUpdater(self.store, learned_against=self.setup)

    def setup(self) -> Setup:
        """What an experience applied now is learned against (``ovtui.train.revalidation``), read
        afresh each time: an environment's policy may be a file that changes under a long run."""
        from ovtui.environments.base import DescribesSetup
        from ovtui.train.revalidation import Setup, schema_hash, text_hash

        trainer = self.config.trainer
        try:
            environment: object = self.resources.environment()
        except OvtuiError:
            # An environment that cannot be built here (its data not installed) must not stop a
            # person's apply: its policy and tools are then not said, so they never drift.
            environment = None
        described = environment if isinstance(environment, DescribesSetup) else None
        return Setup(
            environment=trainer.environment,
            policy_text=text_hash(described.policy_text()) if described else None,
            tool_schema=schema_hash(described.tool_schemas()) if described else None,
            model=self.config.llm.model,
            agent=agent_origin(trainer.agent),
        )

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
        stages = TrainingStages(
            TrajectoryRolloutAnalyzer(self.store, backends.extractor),
            ExperienceGradientEstimator(self.store, backends.proposer),
            PatchMergePolicyOptimizer(self.store, backends.merger, self.resources.review_feedback()),
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
        default: when a model does the thinking; the offline learner calls none)."""
        wanted = self.config.review.model_contradictions
        if wanted is None:
            wanted = self.config.llm.backend != "offline"
        return ModelContradictionCheck(self.llm_client()) if wanted else None

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
            ledger=self.resources.ledger(),
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

    def stream_validation(self) -> list[Case]:
        dataset, batch = self.config.trainer.dataset, self.config.trainer.batch_size
        try:
            return self.validation_cases(dataset, self.case_loader(dataset, "train", batch), batch)
        except OvtuiError:
            return []  # no dataset to validate against: the gate parks plans for the person

    def evaluator_for(self, case: Case) -> RolloutEvaluator | None:
        """The evaluator that can grade ``case`` (for inbox rollouts that come without one): the
        environment of the local datasets (``[trainer] environment``), when it grades such a case."""
        environment = self.resources.environment()
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
        executor = self.executor(dataset)
        # A remote executor's per-service counts are the report's (the same Counter, filled live).
        report.services = getattr(executor, "counts", report.services)
        ledger = self.resources.ledger() if record_outcomes else None
        return OfflinePolicyOptimizationPipeline(
            ContentHashPolicySnapshotter(), executor, trainer, self.loader, run, ledger
        )
