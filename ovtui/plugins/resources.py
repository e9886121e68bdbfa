"""What an entry point names and what a plug-in's factory is handed: ``Resources`` (the
workspace's parts), a ``Backend`` (a backend that says who it is before it is built), the
``CaseSelection`` a case source is asked for, and the factories' signatures.

``Resources`` is implemented by the workspace's builder (``ovtui.wiring.composition``): one per
workspace, so every factory of a run shares the same store, LLM client, ledger and environments.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ovtui.core.config import OvtuiConfig
    from ovtui.core.decisions import RejectionSource
    from ovtui.core.domain import ExperienceSet
    from ovtui.core.interfaces import CaseLoader, PolicyTrainer, RolloutExecutor, TrainingEngine
    from ovtui.llm.client import LLMClient
    from ovtui.memory.hotness import HotnessMix
    from ovtui.memory.ledger import UseLedger
    from ovtui.memory.store import MemoryStore
    from ovtui.plugins.backends import Backends
    from ovtui.plugins.environment import Environment
    from ovtui.storage.paths import WorkspacePaths


class Resources(Protocol):
    """What a plug-in's factory builds from (the builder, ``ovtui.wiring.composition``, is one):
    the workspace's configuration, paths and store, its one LLM client (made on first use, so
    offline runs never build it), its environments, use ledger and reviewers' feedback."""

    config: OvtuiConfig
    paths: WorkspacePaths
    store: MemoryStore

    def llm(self) -> LLMClient: ...

    def environment(self, name: str | None = None) -> Environment: ...

    def ledger(self) -> UseLedger: ...

    def review_feedback(self) -> RejectionSource: ...

    def hotness(self) -> HotnessMix: ...

    def on_retry(self, url: str, attempt: int, attempts: int, reason: str) -> None: ...

    def backend(self, name: str | None = None) -> Backend:
        """The backend ``name`` (default ``[llm] backend``) as it describes itself: a backend that
        changes one seam of another builds that one and replaces the seam."""
        ...


@dataclass(frozen=True)
class CaseSelection:
    """Which cases a run wants from a case source."""

    dataset: str
    split: str
    batch_size: int
    limit: int | None = None


class CaseSource(Protocol):
    """Where a dataset's cases come from, and who runs them when the source does (a remote service
    runs its own cases; a local file leaves them to ``[trainer] agent``)."""

    def cases(self, resources: Resources, selection: CaseSelection) -> CaseLoader: ...

    def executor(self, resources: Resources, dataset: str) -> RolloutExecutor | None: ...


EnvironmentFactory = Callable[["OvtuiConfig | None"], "Environment"]
ExecutorFactory = Callable[[Resources], "RolloutExecutor"]
# A trainer is built per run, around that run's engine, starting from the policy set as loaded.
TrainerFactory = Callable[[Resources, "TrainingEngine", "ExperienceSet"], "PolicyTrainer"]


@dataclass(frozen=True)
class Backend:
    """What an ``ovtui.backends`` entry point names: a backend that says who it is before it is
    built — its ``label`` (the app's top bar, every report and event, ``learned_against``) and
    whether any of its seams calls the ``[llm]`` model (``uses_model``: only then is the model's
    contradiction check on by default, retrieval summarised by the model, the model named in a
    run's report) — and ``build``, which makes its seams from the workspace's ``Resources``."""

    label: str
    uses_model: bool
    build: Callable[[Resources], Backends]
    description: str = ""
