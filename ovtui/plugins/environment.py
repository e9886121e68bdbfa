"""What an environment is: the cases of its splits, one case run by its own agent into a graded
Rollout, the grading of a rollout read back from a file — and what a workspace whose cases are
the environment's asks of it: whether a case is one it can run and grade (``ovtui check``, the
inbox) and how its agent reads experiences (Review's notes).

An environment is registered by name with an entry point of the ``ovtui.environments`` group
(``ovtui.wiring.registry``) naming ``factory(config) -> Environment``, ``config`` being the
workspace's ``OvtuiConfig`` (None outside one: ``ovtui env``). ``EnvironmentDefaults`` gives what
an environment without more to say leaves as is.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet, Rollout, RubricEvaluation
from ovtui.core.errors import OvtuiError
from ovtui.core.interfaces import ExperienceReader, RolloutExecutor

if TYPE_CHECKING:
    from ovtui.memory.hotness import HotnessMix


class EnvironmentError_(OvtuiError):
    """An unknown environment, split or case, or one whose optional data is not installed."""


@runtime_checkable
class Environment(Protocol):
    name: str
    description: str
    # How its own agent reads experiences: which lines it cannot act on (None: it reads anything).
    reader: ExperienceReader | None

    def splits(self) -> list[str]: ...

    def cases(self, split: str) -> list[Case]: ...

    async def execute(self, case: Case, policy_set: ExperienceSet, context: ExecutionContext) -> Rollout:
        """Run one case with the experiences of ``policy_set``; the rollout carries its evaluation
        and ``context.policy_snapshot_id`` unchanged."""
        ...

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation:
        """Grade a rollout of one of its cases from the rollout alone (the RolloutEvaluator that
        grades any agent's rollouts of its cases)."""
        ...

    def agent(self, hotness: HotnessMix | None) -> RolloutExecutor:
        """Its own agent as a workspace runs it (``[trainer] agent`` = its name), recording the
        experiences it retrieves in ``hotness`` when it retrieves any."""
        ...

    def case_problems(self, case: Case) -> list[str]:
        """What keeps ``case`` from being run and graded here, one message each (``ovtui check``
        names them at the case's line)."""
        ...

    def can_grade(self, case: Case) -> bool:
        """Whether ``evaluate`` grades rollouts of ``case`` (an inbox rollout that comes without
        an evaluation is graded here only then)."""
        ...


@runtime_checkable
class DescribesSetup(Protocol):
    """An environment that says what its agent is given: the written policy it must follow and
    the schemas of its tools. What an experience is learned against includes their hashes, so a
    changed policy or tool is drift (``ovtui revalidate``); an environment that does not say has
    neither part compared."""

    def policy_text(self) -> str | None: ...

    def tool_schemas(self) -> list[dict[str, Any]] | None: ...


@runtime_checkable
class HoldsConnections(Protocol):
    """An environment that calls models of its own (an agent, a user simulator): their connections
    belong to the event loop they were opened in, and are closed where that loop's work ends."""

    async def aclose(self) -> None: ...


async def close_environment(environment: Environment) -> None:
    """Close the running loop's connections of an environment that holds some."""
    if isinstance(environment, HoldsConnections):
        await environment.aclose()


class EnvironmentDefaults:
    """For an environment that has nothing more to say: its agent runs a batch case by case through
    ``execute``, every case is fine and gradable, and its agent reads anything."""

    reader: ExperienceReader | None = None

    def agent(self, hotness: HotnessMix | None) -> RolloutExecutor:
        return CaseByCaseAgent(cast("Environment", self))  # the class these defaults are mixed into

    def case_problems(self, case: Case) -> list[str]:
        return []

    def can_grade(self, case: Case) -> bool:
        return True


class CaseByCaseAgent:
    """An environment's ``execute`` as a RolloutExecutor: the cases of a batch run concurrently."""

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.label = environment.name

    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        return list(await asyncio.gather(*(self.environment.execute(c, policy_set, context) for c in cases)))


def check_split(environment: Environment, split: str) -> None:
    if split not in environment.splits():
        known = ", ".join(environment.splits())
        raise EnvironmentError_(f"{environment.name}: no split {split!r} (splits: {known})")
