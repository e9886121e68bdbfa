"""The tau2 airline entry points: the environment (``tau2-airline``, when its data package is
installed) and the agent that replays recorded conversations (``tau2-replay``)."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from ovtui.environments.tau2_airline.data import INSTALL_HINT, PACKAGE
from ovtui.plugins import ConfigError, Environment, EnvironmentError_

if TYPE_CHECKING:
    from ovtui.plugins import OvtuiConfig, Resources, RolloutExecutor


def environment(config: OvtuiConfig | None = None) -> Environment:
    """tau2 airline, its agent and user simulator the models ``config`` names (none without one)."""
    if importlib.util.find_spec(PACKAGE) is None:
        raise EnvironmentError_(INSTALL_HINT)
    from ovtui.environments.tau2_airline.environment import AirlineEnvironment

    return AirlineEnvironment.from_config(config)


def replay_agent(resources: Resources) -> RolloutExecutor:
    """Recorded tau2 airline conversations (``[tau2] replay``), replayed and graded offline."""
    from ovtui.environments.tau2_airline.config import Tau2Config
    from ovtui.environments.tau2_airline.replay import ReplayRolloutExecutor

    replay = resources.config.table(Tau2Config).replay
    if not replay:
        raise ConfigError('[trainer] agent = "tau2-replay" needs [tau2] replay = "<recorded.jsonl>"')
    return ReplayRolloutExecutor.from_file(resources.paths.inside(resources.paths.root / replay))
