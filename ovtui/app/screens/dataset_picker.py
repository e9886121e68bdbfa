"""Pick the dataset of a run from the ones the workspace has (``datasets/`` and ``[datasets.NAME]``)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from ovtui.app.screens.base import GoesBack, back_bindings
from ovtui.app.screens.confirm import keys_hint
from ovtui.app.widgets.marked_options import MarkedOptionList


class DatasetPicker(ModalScreen[str | None], GoesBack):
    """Dismisses with the chosen dataset's name, or None (esc, q)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *back_bindings("datasets", "Cancel"),
        Binding("j", "cursor_down", "Down", id="datasets.down", show=False),
        Binding("k", "cursor_up", "Up", id="datasets.up", show=False),
    ]

    def __init__(self, names: list[str], current: str = "") -> None:
        super().__init__()
        self.names = names
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Dataset of the run", id="dialog-title")
            if self.names:
                yield MarkedOptionList(*(Option(name, id=name) for name in self.names), id="dataset-list")
            else:
                yield Label(
                    "No dataset yet: add datasets/<name>/train.jsonl and test.jsonl (one case per line), "
                    "or a [datasets.<name>] service in ovtui.toml",
                    id="dialog-body",
                )
            yield Label(keys_hint("use this dataset"), id="dialog-keys")

    def on_mount(self) -> None:
        if not self.names:
            return
        options = self.query_one(OptionList)
        options.highlighted = self.names.index(self.current) if self.current in self.names else 0
        options.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cursor_down(self) -> None:
        if self.names:
            self.query_one(OptionList).action_cursor_down()

    def action_cursor_up(self) -> None:
        if self.names:
            self.query_one(OptionList).action_cursor_up()
