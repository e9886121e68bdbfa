"""Shared fixtures: a small generic workspace. Keep it small: put special fixtures next to their tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from workspace_support import build_workspace

from ovtui.memory.store import MemoryStore

# Where compiled bytecode goes when the environment asks for none beside the sources.
BYTECODE_CACHE = Path(__file__).resolve().parents[1] / ".pytest_cache" / "bytecode"


def _cache_bytecode() -> None:
    """The suite starts hundreds of Python processes (``ovtui`` commands, servers, the xdist workers).
    Under PYTHONDONTWRITEBYTECODE each compiled ovtui and rewrote the test modules afresh: half of a
    worker's collection and a tenth of every command's start. The bytecode is kept in a folder of its
    own instead (nothing is written beside the sources), by this process and every one it starts."""
    if not sys.dont_write_bytecode:
        return
    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or str(BYTECODE_CACHE)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.pycache_prefix = prefix
    sys.dont_write_bytecode = False


_cache_bytecode()


@pytest.fixture
def tmp_workspace(tmp_path: Path) -> Path:
    """The root folder of a small workspace (three experiences, two trajectories)."""
    return build_workspace(tmp_path / "ws")


@pytest.fixture
def store(tmp_workspace: Path) -> MemoryStore:
    """A MemoryStore on ``tmp_workspace`` with a short lock timeout."""
    return MemoryStore.open(tmp_workspace, lock_timeout=5.0)
