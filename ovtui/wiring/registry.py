"""Concrete components by name: the one place where the kernel's extension points are filled in.

The engine and the pipeline know only the Protocols of ``ovtui.core.interfaces``. Which class stands
behind each one in a run is chosen here, by the name ``ovtui.toml`` gives:

=============  ==========================  =======================================  ========================
registry       builds                      chosen by                                built in
=============  ==========================  =======================================  ========================
EXECUTORS      RolloutExecutor             ``[trainer] agent``                      sample, llm, tau2-replay
CASE_SOURCES   CaseLoader                  the dataset (``jsonl`` for a local one)  jsonl, remote
TRAINERS       PolicyTrainer               ``[trainer] train_with`` / stream_with   batch, streaming,
                                                                                    session-commit
BACKENDS       extractor/proposer/merger   ``[llm] backend``                        offline, openai
=============  ==========================  =======================================  ========================

To add one (an environment's executor, a remote case source, a trainer, a backend):

1. write it in its own module, implementing the Protocol of its kind;
2. register a factory for it at the bottom of this file, in its kind's section: a small function
   that imports the module lazily (so nobody pays for what the configuration does not use) and
   builds the component from ``Resources``;
3. name it in ``ovtui.toml``. A name that is not registered is a configuration error that lists
   the registered names.

Nothing else changes: not the config schema, not the service, not the pipeline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, TypeVar

from ovtui.core.errors import ConfigError
from ovtui.core.interfaces import CaseLoader, PolicyTrainer, RolloutExecutor, TrainingEngine

if TYPE_CHECKING:
    from ovtui.core.config import OvtuiConfig
    from ovtui.core.domain import ExperienceSet
    from ovtui.llm.client import LLMClient
    from ovtui.memory.hotness import HotnessMix
    from ovtui.memory.store import MemoryStore
    from ovtui.storage.paths import WorkspacePaths
    from ovtui.train.backends.base import GradientProposer, PlanMerger, TrajectoryExtractor

FactoryT = TypeVar("FactoryT")


class Registry(Generic[FactoryT]):
    """Factories of one kind of component, by name."""

    def __init__(self, kind: str, config_key: str) -> None:
        self.kind = kind
        self.config_key = config_key  # where a user chooses one: named in errors
        self._factories: dict[str, FactoryT] = {}

    def register(self, name: str) -> Callable[[FactoryT], FactoryT]:
        """Decorator: ``@EXECUTORS.register("sample")`` over a factory function."""

        def add(factory: FactoryT) -> FactoryT:
            if name in self._factories:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._factories[name] = factory
            return factory

        return add

    def get(self, name: str) -> FactoryT:
        try:
            return self._factories[name]
        except KeyError:
            raise ConfigError(self.unknown(name)) from None

    def unknown(self, name: str) -> str:
        return f"{self.config_key}: unknown {self.kind} {name!r} (registered: {', '.join(self.names())})"

    def names(self) -> list[str]:
        return sorted(self._factories)

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


@dataclass(frozen=True)
class Resources:
    """What a factory may build from: the workspace's configuration, paths and store, and its one
    LLM client (made on first use, so offline runs never build it)."""

    config: OvtuiConfig
    paths: WorkspacePaths
    store: MemoryStore
    llm: Callable[[], LLMClient]


@dataclass(frozen=True)
class CaseSelection:
    """Which cases a run wants from a case source."""

    dataset: str
    split: str
    batch_size: int
    limit: int | None = None


@dataclass(frozen=True)
class Backends:
    """Who does the thinking inside the analyzer, the estimator and the optimizer."""

    extractor: TrajectoryExtractor
    proposer: GradientProposer
    merger: PlanMerger


ExecutorFactory = Callable[[Resources], RolloutExecutor]
CaseSourceFactory = Callable[[Resources, CaseSelection], CaseLoader]
# A trainer is built per run, around that run's engine, starting from the policy set as loaded.
TrainerFactory = Callable[[Resources, "TrainingEngine", "ExperienceSet"], PolicyTrainer]
BackendFactory = Callable[[Resources], Backends]

EXECUTORS: Registry[ExecutorFactory] = Registry("executor", "[trainer] agent")
CASE_SOURCES: Registry[CaseSourceFactory] = Registry("case source", "dataset")
TRAINERS: Registry[TrainerFactory] = Registry("trainer", "[trainer] train_with / stream_with")
BACKENDS: Registry[BackendFactory] = Registry("backend", "[llm] backend")


# --- executors: who runs a case -------------------------------------------------------------------
def hotness_mix(resources: Resources) -> HotnessMix:
    """Where an agent (or a session's extraction) records the memories it retrieves, and how much
    their hotness weighs in its ranking."""
    from ovtui.memory.hotness import HotnessLog, HotnessMix

    cfg = resources.config.retrieval
    return HotnessMix(HotnessLog(resources.paths), cfg.hotness_weight, cfg.hotness_half_life_days)


@EXECUTORS.register("sample")
def _sample_agent(resources: Resources) -> RolloutExecutor:
    from ovtui.environments.sample.agent import SampleAgentExecutor

    return SampleAgentExecutor(hotness=hotness_mix(resources))


@EXECUTORS.register("llm")
def _single_turn_llm(resources: Resources) -> RolloutExecutor:
    from ovtui.environments.sample.evaluator import SampleEvaluator
    from ovtui.train.components.rollout_executor import SingleTurnLLMRolloutExecutor

    return SingleTurnLLMRolloutExecutor(
        resources.llm(), evaluator=SampleEvaluator(), hotness=hotness_mix(resources)
    )


@EXECUTORS.register("tau2-replay")
def _tau2_replay(resources: Resources) -> RolloutExecutor:
    """Recorded tau2 airline conversations (``[tau2] replay``), replayed and graded offline."""
    from ovtui.environments.tau2_airline.replay import ReplayRolloutExecutor

    replay = resources.config.tau2.replay
    if not replay:
        raise ConfigError('[trainer] agent = "tau2-replay" needs [tau2] replay = "<recorded.jsonl>"')
    return ReplayRolloutExecutor.from_file(resources.paths.inside(resources.paths.root / replay))


# --- case sources: where cases come from ----------------------------------------------------------
@CASE_SOURCES.register("jsonl")
def _jsonl_cases(resources: Resources, query: CaseSelection) -> CaseLoader:
    from ovtui.train.components.case_loader import JsonlCaseLoader

    return JsonlCaseLoader(resources.paths, query.dataset, query.split, query.batch_size, query.limit)


@CASE_SOURCES.register("remote")
def _remote_cases(resources: Resources, query: CaseSelection) -> CaseLoader:
    """A dataset declared as ``[datasets.NAME] url = …``: its cases come from the service (whose
    executions the workspace then uses as its executor, see ``Workspace.executor``)."""
    from ovtui.wiring.remote_datasets import remote_case_loader

    return remote_case_loader(resources.config, query.dataset, query.split, query.batch_size, query.limit)


# --- trainers: how rollouts are fed to the engine -------------------------------------------------
@TRAINERS.register("batch")
def _batch_trainer(resources: Resources, engine: TrainingEngine, policy_set: ExperienceSet) -> PolicyTrainer:
    from ovtui.train.components.policy_trainer import BatchPolicyTrainer

    return BatchPolicyTrainer(engine)


@TRAINERS.register("streaming")
def _streaming_trainer(
    resources: Resources, engine: TrainingEngine, policy_set: ExperienceSet
) -> PolicyTrainer:
    from ovtui.train.components.policy_trainer import StreamingPolicyTrainer, StreamingPolicyTrainerConfig

    cfg = resources.config.trainer
    limits = StreamingPolicyTrainerConfig(cfg.max_gradients_per_update, cfg.max_wait_seconds)
    return StreamingPolicyTrainer(engine, policy_set, limits)


@TRAINERS.register("session-commit")
def _session_commit_trainer(
    resources: Resources, engine: TrainingEngine, policy_set: ExperienceSet
) -> PolicyTrainer:
    """Rollouts sent as sessions to ``[sessions] api_url`` (ovtui serve or OpenViking), which trains."""
    from ovtui.core.api_keys import api_key_from_env
    from ovtui.train.components.session_commit_trainer import SessionCommitPolicyTrainer

    cfg = resources.config.sessions
    return SessionCommitPolicyTrainer(
        cfg.api_url,
        api_key=api_key_from_env(cfg.api_key_env, "[sessions] api_key_env"),
        timeout=cfg.commit_timeout,
        max_in_flight=cfg.max_in_flight,
    )


# --- backends: who turns evidence into drafts -----------------------------------------------------
@BACKENDS.register("offline")
def _offline_backends(resources: Resources) -> Backends:
    from ovtui.train.backends.offline import (
        OfflineGradientProposer,
        OfflinePlanMerger,
        OfflineTrajectoryExtractor,
    )

    return Backends(OfflineTrajectoryExtractor(), OfflineGradientProposer(), OfflinePlanMerger())


@BACKENDS.register("openai")
def _llm_backends(resources: Resources) -> Backends:
    from ovtui.train.backends.llm import LLMGradientProposer, LLMPlanMerger, LLMTrajectoryExtractor

    client, store = resources.llm(), resources.store
    return Backends(
        LLMTrajectoryExtractor(client, store),
        LLMGradientProposer(client, store),
        LLMPlanMerger(client, store),
    )
