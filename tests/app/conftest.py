"""Fixtures of the app tests: deterministic workspaces, an app factory, a fake editor."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from app_support import make_workspace
from workspace_support import build_sample_workspace

from ovtui.app.app import OvtuiApp
from ovtui.wiring.workspace import Workspace


@pytest.fixture(autouse=True)
def _stable_terminal(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)
    monkeypatch.setenv("EDITOR", "false")  # a test that forgets the fake editor fails, never hangs
    monkeypatch.setenv("TZ", "UTC")  # the run log's timestamps read the same on every machine
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return make_workspace(tmp_path / "ws")


@pytest.fixture
def sample_workspace(tmp_path: Path) -> Workspace:
    """A fresh sample workspace from the package's sample data (the offline learner's home)."""
    return Workspace(build_sample_workspace(tmp_path / "sample"))


@pytest.fixture
def make_app() -> Callable[..., OvtuiApp]:
    def build(workspace: Workspace, **kwargs: object) -> OvtuiApp:
        kwargs.setdefault("watch_files", False)
        return OvtuiApp(workspace, **kwargs)  # type: ignore[arg-type]

    return build
