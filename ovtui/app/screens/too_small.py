"""Shown instead of a squeezed screen while the terminal is smaller than the app's floor."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import ModalScreen
from textual.widgets import Static

# The floor: at this size every screen's essential controls are visible (issue #7).
MIN_WIDTH, MIN_HEIGHT = 80, 24


def too_small(width: int, height: int) -> bool:
    return width < MIN_WIDTH or height < MIN_HEIGHT


def too_small_text(width: int, height: int) -> str:
    return (
        f"The terminal is {width}×{height}; ovtui needs at least {MIN_WIDTH}×{MIN_HEIGHT}.\n"
        "Make the window larger to go on (ctrl+q quits)."
    )


class TooSmallScreen(ModalScreen[None]):
    def __init__(self, width: int, height: int) -> None:
        super().__init__()
        self.width, self.height = width, height

    def compose(self) -> ComposeResult:
        yield Static(too_small_text(self.width, self.height), id="too-small")

    def show_size(self, width: int, height: int) -> None:
        self.query_one("#too-small", Static).update(too_small_text(width, height))
