"""The one registry: every extension point of the kernel, filled in by name.

The engine, the pipeline, the review, the sessions and the facade know only Protocols. Which
implementation stands behind each one in a workspace is looked up here, by the name ``ovtui.toml``
gives. Every name is an entry point (``importlib.metadata``) of one of these groups, ovtui's own
built-ins included: its pyproject.toml declares them exactly as another package would.

- ``ovtui.environments``: ``factory(config) -> Environment`` (``config`` None outside a workspace),
  chosen by ``[trainer] environment`` (and by ``[trainer] agent`` for its own agent); built in:
  ``sample``, ``tau2-airline``;
- ``ovtui.agents``: ``factory(Resources) -> RolloutExecutor``, chosen by ``[trainer] agent``; built
  in: ``llm``, ``tau2-replay``;
- ``ovtui.case_sources``: a ``CaseSource`` object, chosen by ``[datasets.NAME] source`` (a dataset
  declared nowhere is local: ``jsonl``); built in: ``jsonl``, ``remote``;
- ``ovtui.trainers``: ``factory(Resources, engine, policy_set) -> PolicyTrainer``, chosen by
  ``[trainer] train_with`` / ``stream_with`` and ``[sessions] train_with``; built in: ``batch``,
  ``streaming``, ``streaming-idle``, ``session-commit``;
- ``ovtui.backends``: ``factory(Resources) -> Backends``, chosen by ``[llm] backend``; built in:
  ``offline``, ``openai``;
- ``ovtui.memory_types``: a package of JSON declarations, read by ``ovtui.memory.types`` (not here).

An agent is named by ``[trainer] agent``: one of ``ovtui.agents``, or an environment's name for
that environment's own agent (``sample``), whose experience reader Review and ``ovtui check`` use.

To add one from another package: write the module, declare its entry point in that package's
metadata (``[project.entry-points."ovtui.environments"] name = "module:factory"``), install it and
name it in ``ovtui.toml``. Names are listed without importing anything; a module is imported when
its name is first used. A name nothing registers is a configuration error listing the registered
names, raised when a workspace opens and reported by ``ovtui check`` at its line; an entry point
that cannot be imported is one line naming its distribution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar, cast

from ovtui.core import plugins
from ovtui.core.errors import ConfigError
from ovtui.core.suggest import closest
from ovtui.plugins.resources import (
    CaseSource,
    EnvironmentFactory,
    ExecutorFactory,
    Resources,
    TrainerFactory,
)

if TYPE_CHECKING:
    from ovtui.core.config import OvtuiConfig
    from ovtui.core.interfaces import (
        ExperienceReader,
        RolloutExecutor,
    )
    from ovtui.plugins.environment import Environment
    from ovtui.plugins.resources import Backend

FactoryT = TypeVar("FactoryT")

REINSTALL_HINT = "ovtui's package metadata declares none: reinstall it (pip install -e .)"


class Registry(Generic[FactoryT]):
    """Components of one kind by name: the entry points of ``group``, and any registered in-process
    (a test, a program that embeds ovtui)."""

    def __init__(
        self,
        kind: str,
        config_key: str,
        group: str | None = None,
        *,
        accepts: Callable[[object], bool] = callable,
    ) -> None:
        self.kind = kind
        self.config_key = config_key  # where a user chooses one: named in errors
        self.group = group
        self._accepts = accepts  # what an entry point must name (a factory, unless said otherwise)
        self._registered: dict[str, FactoryT] = {}
        self._loaded: dict[str, FactoryT] = {}

    def register(self, name: str) -> Callable[[FactoryT], FactoryT]:
        """Decorator: ``@AGENTS.register("mine")`` over a factory, for this process only."""

        def add(factory: FactoryT) -> FactoryT:
            if name in self:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._registered[name] = factory
            return factory

        return add

    def _declared(self) -> dict[str, tuple[EntryPoint, ...]]:
        return plugins.declared(self.group) if self.group else {}

    def get(self, name: str, *, asked_by: str | None = None) -> FactoryT:
        """The factory ``name`` (its entry point imported on first use); ``asked_by`` is where the
        name came from when not ``config_key`` (a command's argument)."""
        if name in self._registered:
            return self._registered[name]
        if name in self._loaded:
            return self._loaded[name]
        entries = self._declared().get(name)
        if not entries:
            raise ConfigError(self.unknown(name, asked_by))
        if len(entries) > 1:
            owners = " and ".join(plugins.distribution(e) for e in entries)
            raise ConfigError(f"{self.kind} {name!r} is registered twice (group {self.group}): by {owners}")
        loaded = plugins.load(entries[0])
        if not self._accepts(loaded):
            raise ConfigError(
                f"the entry point {name} = {entries[0].value!r} (group {self.group}) of "
                f"{plugins.distribution(entries[0])} names no {self.kind}: {loaded!r}"
            )
        self._loaded[name] = cast(FactoryT, loaded)
        return self._loaded[name]

    def origin(self, name: str) -> str:
        """Who provides ``name``: the distribution (and version) declaring it, or ``in-process``."""
        entries = self._declared().get(name)
        if name in self._registered or not entries:
            return "in-process"
        return plugins.distribution(entries[0])

    def unknown(self, name: str, asked_by: str | None = None) -> str:
        return f"{asked_by or self.config_key}: {unknown_message(self.kind, name, self.names())}"

    def names(self) -> list[str]:
        return sorted({*self._registered, *self._declared()})

    def __contains__(self, name: object) -> bool:
        return name in self._registered or name in self._declared()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())


def unknown_message(kind: str, name: str, registered: list[str]) -> str:
    close = closest(name, registered)
    hint = f" — did you mean {close!r}?" if close else ""
    return f"unknown {kind} {name!r}{hint} (registered: {', '.join(registered) or REINSTALL_HINT})"


def _is_backend(candidate: object) -> bool:
    return callable(getattr(candidate, "build", None)) and isinstance(getattr(candidate, "label", None), str)


def _is_case_source(candidate: object) -> bool:
    return callable(getattr(candidate, "cases", None)) and callable(getattr(candidate, "executor", None))


ENVIRONMENTS: Registry[EnvironmentFactory] = Registry(
    "environment", "[trainer] environment", "ovtui.environments"
)
AGENTS: Registry[ExecutorFactory] = Registry("agent", "[trainer] agent", "ovtui.agents")
CASE_SOURCES: Registry[CaseSource] = Registry(
    "case source", "[datasets.NAME] source", "ovtui.case_sources", accepts=_is_case_source
)
TRAINERS: Registry[TrainerFactory] = Registry(
    "trainer", "[trainer] train_with / stream_with", "ovtui.trainers"
)
BACKENDS: Registry[Backend] = Registry("backend", "[llm] backend", "ovtui.backends", accepts=_is_backend)

LOCAL_SOURCE = "jsonl"  # the case source of a dataset no [datasets.NAME] declares: datasets/NAME/*.jsonl


# --- agents: one of ovtui.agents, or an environment's own ------------------------------------------
def agent_names() -> list[str]:
    return sorted({*AGENTS.names(), *ENVIRONMENTS.names()})


def _environment_of_agent(name: str) -> str | None:
    """The environment whose own agent ``name`` is (an agent of that name comes first), or None."""
    return name if name not in AGENTS and name in ENVIRONMENTS else None


def agent(name: str, resources: Resources) -> RolloutExecutor:
    """The executor ``[trainer] agent = name`` stands for, built from ``resources``."""
    environment = _environment_of_agent(name)
    if environment is not None:
        return resources.environment(environment).agent(resources.hotness())
    if name not in AGENTS:
        raise ConfigError(f"{AGENTS.config_key}: {unknown_message('agent', name, agent_names())}")
    from ovtui.train.components.graded_executor import GradedRolloutExecutor

    return GradedRolloutExecutor(AGENTS.get(name)(resources), resources.environment())


def agent_origin(name: str) -> str:
    """Who provides the agent ``name``: ``name (distribution version)`` of the entry point that
    declares it (an agent of that name comes first), or ``name (in-process)`` for one registered
    by the program itself; a new version of the agent is a new origin."""
    registry = ENVIRONMENTS if _environment_of_agent(name) is not None else AGENTS
    return f"{name} ({registry.origin(name)})"


def agent_reader(name: str, environment: Callable[[str], Environment]) -> ExperienceReader | None:
    """How the agent ``name`` reads experiences: its environment's reader for an environment's own
    agent, None (it reads anything) for any other."""
    own = _environment_of_agent(name)
    return environment(own).reader if own is not None else None


def case_source(config: OvtuiConfig, dataset: str) -> CaseSource:
    """The case source of ``dataset``: the one its ``[datasets.NAME]`` names, else local files."""
    declared = config.datasets.get(dataset)
    return CASE_SOURCES.get(declared.source if declared is not None else LOCAL_SOURCE)


# --- the names a configuration gives, checked -------------------------------------------------------
def unknown_names(config: OvtuiConfig) -> list[tuple[str, str]]:
    """(the key as a dotted path, the problem) for each component name in ``config`` that nothing
    registers, e.g. ``("trainer.agent", "unknown agent 'nobody' (registered: llm, sample, …)")``."""
    trainer, sessions = config.trainer, config.sessions
    chosen = [
        ("llm.backend", config.llm.backend, BACKENDS.kind, BACKENDS.names()),
        ("trainer.environment", trainer.environment, ENVIRONMENTS.kind, ENVIRONMENTS.names()),
        ("trainer.agent", trainer.agent, AGENTS.kind, agent_names()),
        ("trainer.train_with", trainer.train_with, TRAINERS.kind, TRAINERS.names()),
        ("trainer.stream_with", trainer.stream_with, TRAINERS.kind, TRAINERS.names()),
        ("sessions.train_with", sessions.train_with, TRAINERS.kind, TRAINERS.names()),
        *(
            (f"datasets.{name}.source", remote.source, CASE_SOURCES.kind, CASE_SOURCES.names())
            for name, remote in config.datasets.items()
        ),
    ]
    return [
        (key, unknown_message(kind, value, names)) for key, value, kind, names in chosen if value not in names
    ]


def names_too(exc: ConfigError) -> ConfigError:
    """A schema error of ovtui.toml with the unknown component names of the rest of the file
    added, so one report says everything wrong (``backend = "offlne"`` beside a misspelt key)."""
    from ovtui.storage.config_file import InvalidConfig

    partial = exc.partial if isinstance(exc, InvalidConfig) else None
    problems = unknown_names(partial) if partial is not None else []
    if not problems:
        return exc
    return ConfigError("\n".join([str(exc), *(f"  [{key}] {problem}" for key, problem in problems)]))


def check_names(config: OvtuiConfig, source: Path | str) -> None:
    """Raise a ConfigError naming ``source`` (the workspace's ovtui.toml) and every key whose
    component name nothing registers — the shape a schema error of ovtui.toml has."""
    problems = unknown_names(config)
    if problems:
        lines = [f"{source}: invalid configuration", *(f"  [{key}] {problem}" for key, problem in problems)]
        raise ConfigError("\n".join(lines))
