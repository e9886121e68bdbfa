"""Subcommands of ``ovtui``: each module has ``add_parsers(sub)`` and sets ``handler`` on its parsers.

``open_store`` is what every command that works on a workspace calls first: it checks the folder,
reads the user from ``ovtui.toml`` and finishes an apply that a crash interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ovtui.core.errors import ConfigError
from ovtui.memory.store import MemoryStore
from ovtui.storage.config_file import load_config
from ovtui.storage.opening import recover_on_start, require_workspace
from ovtui.storage.paths import WorkspacePaths


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``minimum`` (0 really means zero)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is too small: use {minimum} or more")
        return value

    parse.__name__ = "whole number"  # argparse names the type in its own messages
    return parse


def where(path: Path | str) -> str:
    """A path as the user can open it from where they stand: relative to the current folder when it
    lies inside it, absolute otherwise (a workspace-relative path opens nothing from elsewhere)."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(Path.cwd().resolve()).as_posix() or "."
    except ValueError:
        return str(resolved)


def open_store(workspace: Path | str, *, strict_config: bool = True, recover_now: bool = True) -> MemoryStore:
    root = Path(workspace)
    require_workspace(root)
    try:
        user = load_config(root).workspace.user
    except ConfigError:
        if strict_config:
            raise
        user = "default"  # `ovtui check` reports the config problem itself
    store = MemoryStore(WorkspacePaths(root, user))
    if recover_now:
        done = recover_on_start(store.paths, store.lock)
        if done:
            print(f"ovtui: recovery: {done}", file=sys.stderr)
    return store
