"""The reviewer's choice of which line of a contradiction stands: the item's, the other
experience's, or both (they are for different situations after all). Never made for them."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from ovtui.app.screens.base import GoesBack, back_bindings
from ovtui.app.screens.confirm import keys_hint
from ovtui.train.review.gates.contradictions import Stands


class StandsModal(ModalScreen[Stands | None], GoesBack):
    """Both lines, and three buttons; dismisses with ``this``, ``other``, ``both`` or None (esc, q)."""

    BINDINGS: ClassVar[list[BindingType]] = back_bindings("stands", "Cancel")

    def __init__(self, finding: dict[str, Any]) -> None:
        super().__init__()
        self.finding = finding

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("Which line stands?", id="dialog-title")
            yield Static(f"this item, line {self.finding['line']}: {self.finding['rule']}", markup=False)
            yield Static(f"{self.finding['other']}: {self.finding['other_line']}", markup=False)
            with Horizontal(id="dialog-buttons"):
                yield Button("This item's", id="this", variant="primary")
                yield Button("The other (drop this line)", id="other", variant="warning")
                yield Button("Both", id="both")
                yield Button("Cancel", id="cancel")
            yield Label(keys_hint("this item's line stands"), id="dialog-keys")

    @on(Button.Pressed, "#this")
    def _this(self) -> None:
        self.dismiss("this")

    @on(Button.Pressed, "#other")
    def _other(self) -> None:
        self.dismiss("other")

    @on(Button.Pressed, "#both")
    def _both(self) -> None:
        self.dismiss("both")

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.leave()
