"""Fixtures of the app tests: deterministic workspaces, an app factory, a fake editor."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from app_support import make_workspace

from ovtui.app.app import OvtuiApp
from ovtui.service import Workspace

SAMPLE = Path(__file__).resolve().parents[2] / "sample_workspace"


@pytest.fixture(autouse=True)
def _stable_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)
    monkeypatch.setenv("EDITOR", "false")  # a test that forgets the fake editor fails, never hangs


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return make_workspace(tmp_path / "ws")


@pytest.fixture
def sample_workspace(tmp_path: Path) -> Workspace:
    """A fresh copy of the repository's sample workspace (the offline learner's home)."""
    if not (SAMPLE / "ovtui.toml").exists():
        pytest.skip("sample_workspace/ is not in this checkout")
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE, root, ignore=shutil.ignore_patterns(".ovtui", "runs", "history"))
    return Workspace(root)


@pytest.fixture
def make_app() -> Callable[..., OvtuiApp]:
    def build(workspace: Workspace, **kwargs: object) -> OvtuiApp:
        kwargs.setdefault("watch_files", False)
        return OvtuiApp(workspace, **kwargs)  # type: ignore[arg-type]

    return build
