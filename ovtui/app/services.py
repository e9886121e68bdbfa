"""What the app hands each main screen when it builds it: data down, never a reach into the app."""

from __future__ import annotations

from dataclasses import dataclass

from ovtui.app.editor import Editor
from ovtui.core.events import Listener
from ovtui.wiring.workspace import Workspace


@dataclass(frozen=True)
class Tab:
    """One entry of the top bar, derived from the screen registry."""

    key: str
    label: str
    shows_pending: bool = False


@dataclass(frozen=True)
class ScreenServices:
    workspace: Workspace
    listener: Listener  # where a screen's runs send their kernel events (the app's pump)
    editor: Editor
    tabs: tuple[Tab, ...]
