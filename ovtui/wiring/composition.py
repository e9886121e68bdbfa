"""The one builder of a workspace: its shared parts (``ovtui.wiring.parts``, each made once) and,
on top of them, each run's parts — case loaders, the agent, the engine and its gates, the
pipeline, a trainer, the updater, the session committer — assembled by the names ``ovtui.toml``
gives (``ovtui.wiring.registry``). Nothing else constructs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ovtui.core.errors import OvtuiError
from ovtui.core.splits import VALIDATION_SPLIT
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.wiring.parts import SharedParts
from ovtui.wiring.registry import TRAINERS, agent, agent_origin, agent_reader, case_source

if TYPE_CHECKING:
    from ovtui.core.context import RunContext
    from ovtui.core.domain import Case, ExperienceSet
    from ovtui.core.interfaces import (
        CaseLoader,
        ExperienceReader,
        PolicyTrainer,
        PolicyUpdater,
        RolloutEvaluator,
        RolloutExecutor,
    )
    from ovtui.sessions.commit import SessionCommitter
    from ovtui.train.engine import PolicyTrainingEngine
    from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline
    from ovtui.train.reports import RunReport
    from ovtui.train.revalidation import Setup
    from ovtui.train.review.gates.model_contradictions import ModelContradictionCheck
    from ovtui.train.review.gates.runner import GateRunner


NO_VALIDATION_HINT = (
    "Runs score the validation split (the test split is sealed): add the dataset's validation.jsonl, "
    "or hold out a share of train with `[trainer] validation = 0.2` in ovtui.toml; a sealed split is "
    "scored only on request (--split test --unseal, or train --eval-split test --unseal), counted"
)


@dataclass(frozen=True)
class TrainPlan:
    """A train run's settings, its options resolved against ovtui.toml once."""

    dataset: str
    epochs: int
    batch_size: int
    approve: str
    dry_run: bool
    eval_split: str | None
    limit: int | None
    trials: int
    wait_for_review: bool


@dataclass(frozen=True)
class TrainingRun:
    """A train run's parts: its cases (the validation share held out), the policy set it starts
    from and the pipeline around its engine and trainer."""

    train_cases: CaseLoader
    eval_cases: CaseLoader | None
    policy_set: ExperienceSet
    pipeline: OfflinePolicyOptimizationPipeline


class Composition(SharedParts):
    def training_run(self, run: RunContext, report: RunReport, plan: TrainPlan) -> TrainingRun:
        """Everything a train run needs, in one trip (file work: call it in a thread)."""
        train_cases = self.case_loader(plan.dataset, "train", plan.batch_size, plan.limit)
        validation = self.validation_cases(plan.dataset, train_cases, plan.batch_size)
        split = plan.eval_split
        eval_cases = None
        if split == VALIDATION_SPLIT and self.held_out_of_train(plan.dataset):
            # The share of train the gate holds out is this run's validation split too: the
            # same cases, so the before/after figures and the gate never see a trained-on case.
            eval_cases = self.repeated(ListCaseLoader(validation, plan.batch_size), plan.trials)
        elif split:
            eval_cases = self.eval_cases(plan.dataset, split, plan.batch_size, plan.trials)
        engine = self.engine(
            run,
            approve=plan.approve,
            dry_run=plan.dry_run,
            wait_for_review=plan.wait_for_review,
            validation=validation,
        )
        policy_set = self.loader.load_sync()
        trainer = self.trainer(self.config.trainer.train_with, engine, policy_set)
        pipeline = self.pipeline(trainer, run, plan.dataset, report)
        return TrainingRun(train_cases, eval_cases, policy_set, pipeline)

    def updater(self, dry_run: bool) -> PolicyUpdater:
        from ovtui.train.components.policy_updater import DryRunPolicyUpdater, MemoryFilePolicyUpdater

        if dry_run:
            return DryRunPolicyUpdater(self.store)
        return MemoryFilePolicyUpdater(self.store, learned_against=self.setup)

    def setup(self) -> Setup:
        """What an experience applied now is learned against, read afresh each time: an
        environment's policy may be a file that changes under a long run."""
        from ovtui.train.revalidation import setup_now

        try:
            environment: object = self.environment()
        except OvtuiError:
            # An environment that cannot be built here (its data not installed) must not stop a
            # person's apply: its policy and tools are then not said, so they never drift.
            environment = None
        backend, trainer = self.backend(), self.config.trainer
        return setup_now(
            trainer.environment,
            environment,
            model=self.config.llm.model if backend.uses_model else None,
            agent=agent_origin(trainer.agent),
            backend=backend.label,
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
        """An eval split, each case run ``trials`` times. The validation split of a dataset without
        ``validation.jsonl`` is the ``[trainer] validation`` share held out of its train split."""
        if split == VALIDATION_SPLIT and self.held_out_of_train(dataset):
            train = self.case_loader(dataset, "train", batch_size)
            held_out = ListCaseLoader(self.validation_cases(dataset, train, batch_size), batch_size)
            return self.repeated(held_out, trials)
        try:
            cases = self.case_loader(dataset, split, batch_size)
        except OvtuiError as error:
            if split != VALIDATION_SPLIT or not (self.paths.datasets / dataset).is_dir():
                raise  # another split, or no such dataset at all: the datasets there are is the help
            raise OvtuiError(f"{error}. {NO_VALIDATION_HINT}") from None
        return self.repeated(cases, trials)

    def held_out_of_train(self, dataset: str) -> bool:
        """Whether ``dataset``'s validation split is a share of its train split (it has no
        ``validation.jsonl`` and ``[trainer] validation`` holds one out)."""
        own_file = (self.paths.datasets / dataset / f"{VALIDATION_SPLIT}.jsonl").exists()
        return not own_file and self.config.trainer.validation > 0

    @staticmethod
    def repeated(cases: CaseLoader, trials: int) -> CaseLoader:
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
        policy = ReviewPolicy(approve, self.config.review.second_approver_for)
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
        reruns = self.config.trainer.eval_trials  # as many A/A reruns as an eval runs trials
        validating = ValidationGate(validation, self.executor(), reruns=reruns) if validation else None
        reader = self.experience_reader()
        model_check = self.contradiction_check()
        gates: list[Gate] = [EvidenceGate()]
        if reader is not None:
            gates.append(ReadabilityGate(reader))
        gates += [LeakGate(), ContradictionGate(), model_check, SanitizerGate()]
        if validating is not None:
            gates.append(validating)
        return GateRunner(gates)

    def contradiction_check(self) -> ModelContradictionCheck:
        """The model's contradiction check: it asks the model about an item no merger looked at
        when ``[review] model_contradictions`` says so (by default: when the backend's learner is a
        model; a model-free one calls none)."""
        from ovtui.train.review.gates.model_contradictions import ModelContradictionCheck

        wanted = self.config.review.model_contradictions
        if wanted is None:
            wanted = self.backend().uses_model
        # Built either way: a merger's reports are checked (and taken off the items) at no cost;
        # only with a model wanted are the items no merger looked at asked about in calls.
        return ModelContradictionCheck(self.llm() if wanted else None)

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
            adherence=self.adherence,
        )

    def validation_cases(self, dataset: str, train_cases: CaseLoader | None, batch: int) -> list[Case]:
        """Held-out cases for the gate: ``validation.jsonl`` if the dataset has one, else a stable
        ``[trainer] validation`` share of the train split, which is then not trained on (streaming,
        which trains on the inbox, passes the train split itself)."""
        from ovtui.train.review.gates.validation import split_validation

        if (self.paths.datasets / dataset / f"{VALIDATION_SPLIT}.jsonl").exists():
            loader = self.case_loader(dataset, VALIDATION_SPLIT, batch)
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
            ContentHashPolicySnapshotter(),
            executor,
            trainer,
            self.loader,
            run,
            ledger,
            adherence=self.adherence if record_outcomes else None,
        )
