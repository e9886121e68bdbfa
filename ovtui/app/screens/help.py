"""The help screen: every binding with its key (after ``[keys]`` remaps), id and description."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label

from ovtui.app.keys import catalog


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Close", id="help.close"),
        Binding("q", "dismiss", "Close", id="help.close_q", show=False),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Label(
                "Keys  (remap any id under \\[keys] in ovtui.toml; ctrl+p lists them as commands)",
                id="help-title",
            )
            yield DataTable(id="help-table", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        app: Any = self.app
        table = self.query_one(DataTable)
        table.add_columns("screen", "key", "action", "id")
        for info in catalog(app, app.binding_sources(), app.keymap):
            table.add_row(info.context, info.keys, info.description, info.id)
        table.focus()
