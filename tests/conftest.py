"""Shared fixtures: a small generic workspace. Keep it small: put special fixtures next to their tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from workspace_support import build_workspace

from ovtui.memory.store import MemoryStore


@pytest.fixture
def tmp_workspace(tmp_path: Path) -> Path:
    """The root folder of a small workspace (three experiences, two trajectories)."""
    return build_workspace(tmp_path / "ws")


@pytest.fixture
def store(tmp_workspace: Path) -> MemoryStore:
    """A MemoryStore on ``tmp_workspace`` with a short lock timeout."""
    return MemoryStore.open(tmp_workspace, lock_timeout=5.0)
