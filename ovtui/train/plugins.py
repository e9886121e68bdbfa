"""The training loop's own entry points (pyproject.toml declares them, as another package would):
the case sources (``jsonl``, ``remote``), the trainers (``batch``, ``streaming``,
``streaming-idle``, ``session-commit``) and the ``llm`` agent.

Each factory builds its component from the workspace's ``Resources`` (``ovtui.wiring.registry``)
and imports it only when called, so nobody pays for what the configuration does not use.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ovtui.core.api_keys import api_key_from_env
from ovtui.core.errors import ConfigError

if TYPE_CHECKING:
    from ovtui.core.config import RemoteDatasetConfig
    from ovtui.core.domain import ExperienceSet
    from ovtui.core.interfaces import CaseLoader, PolicyTrainer, RolloutExecutor, TrainingEngine
    from ovtui.core.retry import RetryPolicy
    from ovtui.plugins import CaseSelection, Resources


# --- case sources: where cases come from ----------------------------------------------------------
class JsonlCases:
    """``datasets/NAME/<split>.jsonl`` in the workspace; its cases are run by ``[trainer] agent``."""

    def cases(self, resources: Resources, selection: CaseSelection) -> CaseLoader:
        from ovtui.train.components.case_loader import JsonlCaseLoader

        return JsonlCaseLoader(
            resources.paths, selection.dataset, selection.split, selection.batch_size, selection.limit
        )

    def executor(self, resources: Resources, dataset: str) -> RolloutExecutor | None:
        return None


class RemoteCases:
    """A dataset declared as ``[datasets.NAME] url = …``: its cases come from a benchmark service
    (``ovtui env serve``), which runs them too, so train, eval and the app use it like a local one."""

    def cases(self, resources: Resources, selection: CaseSelection) -> CaseLoader:
        from ovtui.train.components.remote import RemoteCaseLoader

        remote = _served(resources, selection.dataset)
        return RemoteCaseLoader(
            remote.urls[0],
            remote.split or selection.split,
            dataset=remote.dataset,
            domain=remote.domain,
            filters=remote.filters,
            api_key=remote_api_key(selection.dataset, remote),
            batch_size=selection.batch_size,
            limit=selection.limit,
            max_pages=remote.max_pages,
            request_timeout=remote.request_timeout,
            retry=service_retry(remote),
            on_retry=resources.on_retry,
        )

    def executor(self, resources: Resources, dataset: str) -> RolloutExecutor | None:
        from ovtui.train.components.remote import RemoteRolloutExecutor

        remote = _served(resources, dataset)
        return RemoteRolloutExecutor(
            remote.urls,
            api_key=remote_api_key(dataset, remote),
            max_in_flight=remote.max_in_flight,
            timeout=remote.timeout,
            request_timeout=remote.request_timeout,
            retry=service_retry(remote),
        )


def service_retry(remote: RemoteDatasetConfig) -> RetryPolicy:
    """The service's backoff, starting at the dataset's ``retry_delay``."""
    from ovtui.train.components.remote_transport import SERVICE_RETRY

    return replace(SERVICE_RETRY, base_delay=remote.retry_delay)


def _served(resources: Resources, name: str) -> RemoteDatasetConfig:
    remote = resources.config.datasets[name]
    if not remote.urls:
        raise ConfigError(f"[datasets.{name}] url: the remote case source needs the service's URL")
    return remote


def remote_api_key(name: str, remote: RemoteDatasetConfig) -> str | None:
    return api_key_from_env(remote.api_key_env, f"[datasets.{name}] api_key_env")


JSONL = JsonlCases()
REMOTE = RemoteCases()


# --- trainers: how rollouts are fed to the engine -------------------------------------------------
def batch_trainer(resources: Resources, engine: TrainingEngine, policy_set: ExperienceSet) -> PolicyTrainer:
    from ovtui.train.components.policy_trainer import BatchPolicyTrainer

    return BatchPolicyTrainer(engine)


def _streaming(
    resources: Resources, engine: TrainingEngine, policy_set: ExperienceSet, *, flush_when_idle: bool
) -> PolicyTrainer:
    from ovtui.train.components.policy_trainer import StreamingPolicyTrainer, StreamingPolicyTrainerConfig

    cfg = resources.config.trainer
    limits = StreamingPolicyTrainerConfig(
        cfg.max_gradients_per_update, cfg.max_wait_seconds, flush_when_idle=flush_when_idle
    )
    return StreamingPolicyTrainer(engine, policy_set, limits)


def streaming_trainer(
    resources: Resources, engine: TrainingEngine, policy_set: ExperienceSet
) -> PolicyTrainer:
    """Rollouts one by one, a batch flushed by count or age (``train --watch``, the app's streaming)."""
    return _streaming(resources, engine, policy_set, flush_when_idle=False)


def streaming_idle_trainer(
    resources: Resources, engine: TrainingEngine, policy_set: ExperienceSet
) -> PolicyTrainer:
    """Streaming that also flushes as soon as no submitter is still analysing (the session API's: a
    lone commit does not wait out the age window; concurrent commits still share one plan)."""
    return _streaming(resources, engine, policy_set, flush_when_idle=True)


def session_commit_trainer(
    resources: Resources, engine: TrainingEngine, policy_set: ExperienceSet
) -> PolicyTrainer:
    """Rollouts sent as training sessions to ``[sessions] api_url`` (ovtui serve or OpenViking),
    which trains; what it changed comes back as a pending plan here (``[sessions] review_remote``)."""
    from ovtui.train.components.session_commit_trainer import LocalReview, SessionCommitPolicyTrainer
    from ovtui.train.review.pending import PendingPlans

    cfg = resources.config.sessions
    review = None
    if cfg.review_remote:
        events = engine.events if engine is not None else None
        review = LocalReview(resources.store, PendingPlans(resources.store), events)
    return SessionCommitPolicyTrainer(
        cfg.api_url,
        api_key=api_key_from_env(cfg.api_key_env, "[sessions] api_key_env"),
        timeout=cfg.commit_timeout,
        max_in_flight=cfg.max_in_flight,
        review=review,
    )


# --- agents: who runs a case ----------------------------------------------------------------------
def llm_agent(resources: Resources) -> RolloutExecutor:
    """One chat call per case to ``[llm]`` (graded, as every agent is, by the datasets' environment)."""
    from ovtui.train.components.rollout_executor import SingleTurnLLMRolloutExecutor

    return SingleTurnLLMRolloutExecutor(resources.llm(), hotness=resources.hotness())
