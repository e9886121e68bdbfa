"""A run's results case by case (``f`` on Run): the cases that flipped first, each with how it ran
before and after; esc or q goes back."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from ovtui.app.screens.base import GoesBack, back_bindings
from ovtui.app.views.case_results import CaseResult, group_counts
from ovtui.app.widgets.footer import KeyFooter
from ovtui.app.widgets.marked_options import MarkedOptionList


class CaseResultsScreen(GoesBack, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        *back_bindings("cases"),
        Binding("j", "next", "Next", id="cases.next", show=False),
        Binding("k", "previous", "Previous", id="cases.previous", show=False),
    ]

    def __init__(self, run_label: str, rows: list[CaseResult]) -> None:
        super().__init__()
        self.run_label = run_label
        self.rows = rows

    def compose(self) -> ComposeResult:
        yield Label(f"Cases of {self.run_label}: {group_counts(self.rows)}", id="cases-title", markup=False)
        width = max((len(r.group) for r in self.rows), default=0)
        options = [Option(f"{r.group:<{width}}  {r.case}", id=str(i)) for i, r in enumerate(self.rows)]
        yield MarkedOptionList(*options, id="cases-list")
        yield Static(
            "" if self.rows else "No evaluated case: run an eval (v) or a train run with evaluation.",
            id="case-evidence",
            markup=False,
        )
        yield KeyFooter()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.rows:
            options.highlighted = 0
        options.focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self.query_one("#case-evidence", Static).update(self.rows[event.option_index].evidence())

    def action_next(self) -> None:
        self.query_one(OptionList).action_cursor_down()

    def action_previous(self) -> None:
        self.query_one(OptionList).action_cursor_up()
