"""Small modals: a confirmation (with an optional extra choice, e.g. force) and a note."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


def when_confirmed(then: Callable[[], object]) -> Callable[[str | None], None]:
    """A ``push_screen`` callback that runs ``then`` only when the confirm button was pressed."""

    def answered(answer: str | None) -> None:
        if answer == "confirm":
            then()

    return answered


class ConfirmModal(ModalScreen[str | None]):
    """Dismisses with the id of the button pressed ("confirm", or the extra one), or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Cancel", id="modal.cancel")]

    def __init__(
        self,
        title: str,
        body: str,
        *,
        confirm: str = "Confirm",
        danger: bool = False,
        extra: tuple[str, str] | None = None,
    ) -> None:
        super().__init__(classes="danger" if danger else "")
        self.title_text = title
        self.body = body
        self.confirm_label = confirm
        self.danger = danger
        self.extra = extra

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title")
            yield Static(self.body, id="dialog-body", markup=False)
            with Horizontal(id="dialog-buttons"):
                yield Button(self.confirm_label, id="confirm", variant="error" if self.danger else "primary")
                if self.extra:
                    yield Button(self.extra[1], id=self.extra[0], variant="warning")
                yield Button("Cancel", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "cancel" else event.button.id)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)


class NoteModal(ModalScreen[tuple[str, str] | None]):
    """Approve or reject with a note: dismisses with (decision, note), or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss_none", "Cancel", id="note.cancel")]

    def __init__(self, target: str, note: str = "") -> None:
        super().__init__()
        self.target = target
        self.note = note

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(f"Decide on {self.target}", id="dialog-title")
            yield Input(value=self.note, placeholder="note (optional)", id="note")
            with Horizontal(id="dialog-buttons"):
                yield Button("Approve", id="approved", variant="success")
                yield Button("Reject", id="rejected", variant="error")
                yield Button("Cancel", id="cancel")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "cancel":
            self.dismiss(None)
            return
        self.dismiss((str(event.button.id), self.query_one(Input).value.strip()))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(("approved", event.value.strip()))

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
