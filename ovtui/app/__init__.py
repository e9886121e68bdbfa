"""The terminal app: the only package of ovtui that imports Textual.

``run_app(root)`` opens the app on a workspace folder; the CLI calls it for ``ovtui [WORKSPACE]``.
Textual is imported only when the app starts, so the headless commands stay quick to launch.
"""

from __future__ import annotations

from pathlib import Path


def run_app(root: Path) -> None:
    from ovtui.app.app import OvtuiApp
    from ovtui.wiring.workspace import Workspace

    OvtuiApp(Workspace(root)).run()


def run(root: Path | str) -> int:
    """The CLI's entry: ``ovtui [WORKSPACE]``."""
    run_app(Path(root))
    return 0
