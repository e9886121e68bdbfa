"""Environments by name: ``sample`` always, ``tau2-airline`` when its data package is installed."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass

from ovtui.core.config import OvtuiConfig
from ovtui.environments.base import Environment, EnvironmentError_


def _sample(config: OvtuiConfig | None) -> Environment:
    from ovtui.environments.sample.environment import SampleEnvironment

    return SampleEnvironment()


def _tau2_airline(config: OvtuiConfig | None) -> Environment:
    from ovtui.environments.tau2_airline.data import INSTALL_HINT, PACKAGE

    if importlib.util.find_spec(PACKAGE) is None:
        raise EnvironmentError_(INSTALL_HINT)
    from ovtui.environments.tau2_airline.environment import AirlineEnvironment

    return AirlineEnvironment.from_config(config)


@dataclass(frozen=True, slots=True)
class EnvironmentEntry:
    name: str
    description: str
    factory: Callable[[OvtuiConfig | None], Environment]


ENVIRONMENTS: dict[str, EnvironmentEntry] = {
    "sample": EnvironmentEntry("sample", "the sample airline help desk (scripted agent)", _sample),
    "tau2-airline": EnvironmentEntry(
        "tau2-airline", "tau2-bench airline domain (MIT data © 2025 Sierra Research)", _tau2_airline
    ),
}


def environment_names() -> list[str]:
    return list(ENVIRONMENTS)


def get_environment(name: str, config: OvtuiConfig | None = None) -> Environment:
    """The environment ``name``; ``config`` gives the models of environments that need them."""
    entry = ENVIRONMENTS.get(name)
    if entry is None:
        raise EnvironmentError_(f"unknown environment {name!r} (known: {', '.join(ENVIRONMENTS)})")
    return entry.factory(config)
