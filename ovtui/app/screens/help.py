"""The help screen: every binding with its key (after ``[keys]`` remaps), id and description."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label

from ovtui.app.keys import BindingInfo
from ovtui.app.widgets.vim_table import VimTable

TITLE = (
    "Keys  (tab moves the focus, l focuses a diff and h goes back; remap any id under \\[keys] in "
    "ovtui.toml; ctrl+p lists them as commands)"
)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close", id="help.close"),
        Binding("q", "dismiss", "Close", id="help.close_q", show=False),
    ]

    def __init__(self, bindings: Sequence[BindingInfo]) -> None:
        super().__init__()
        self.bindings = list(bindings)

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Label(TITLE, id="help-title")
            yield VimTable(id="help-table")  # j/k/g/G as in every list (the README's "Lists")

    def on_mount(self) -> None:
        table = self.query_one("#help-table", VimTable)
        table.add_columns("screen", "key", "action", "id")
        for info in self.bindings:
            table.add_row(info.context, info.keys, info.description, info.id)
        table.focus()
