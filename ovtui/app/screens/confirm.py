"""Small modals: a confirmation and a note.

Every dialog focuses its default button and says what Enter and Escape do: safe defaults (Cancel)
for what deletes or overwrites, the action itself where it can be undone (a revert has its own record).
The hint follows the focus: enter presses the focused button, and the hint names that one; ←/→ (and
Tab) move between the buttons, and the focused one wears a ``▶`` mark, so it shows without colour.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Input, Label, Static

from ovtui.app.screens.base import GoesBack, back_bindings
from ovtui.train.review.plans import Decision


def when_confirmed(then: Callable[[], object]) -> Callable[[bool | None], None]:
    """A ``push_screen`` callback that runs ``then`` only when the confirm button was pressed."""

    def answered(confirmed: bool | None) -> None:
        if confirmed:
            then()

    return answered


def keys_hint(enter: str) -> str:
    return f"enter: {enter} · esc: cancel"


FOCUS_MARK = "▶ "  # before the focused button's label: the focus seen without colour
NO_MARK = "  "  # before the others': the buttons keep their width (a click never lands beside)


def button_keys(context: str) -> list[BindingType]:
    """←/→ between a dialog's buttons (ids ``<context>.left`` and ``<context>.right``)."""
    return [
        Binding("left", "move_button(-1)", "Previous button", id=f"{context}.left", show=False),
        Binding("right", "move_button(1)", "Next button", id=f"{context}.right", show=False),
    ]


class ButtonsDialog(Screen[object]):
    """A dialog's row of buttons (``#dialog-buttons``) and its hint (``#dialog-keys``): the hint
    names what enter does now, ←/→ move between the buttons, the focused one is marked."""

    _labels: dict[str, str] | None = None  # each button's own label, before any mark

    def enter_does(self) -> str:
        """What enter does while no button has the focus (a dialog's text field)."""
        return "Cancel"

    def _buttons(self) -> list[Button]:
        return list(self.query("#dialog-buttons Button").results(Button))

    def labels(self) -> dict[str, str]:
        if self._labels is None:
            self._labels = {str(b.id): str(b.label) for b in self._buttons()}
        return self._labels

    def action_move_button(self, step: int) -> None:
        buttons = [b for b in self._buttons() if not b.disabled]
        if not buttons:
            return
        at = buttons.index(self.focused) if self.focused in buttons else (-1 if step > 0 else 0)
        buttons[(at + step) % len(buttons)].focus()

    def on_descendant_focus(self) -> None:
        focused, labels = self.focused, self.labels()
        for button in self._buttons():
            mark = FOCUS_MARK if button is focused else NO_MARK
            button.label = mark + labels.get(str(button.id), str(button.label))
        enter = labels.get(str(focused.id), "") if isinstance(focused, Button) else self.enter_does()
        for hint in self.query("#dialog-keys").results(Label):
            hint.update(f"enter: {enter} · ←/→ · esc: cancel")  # one line: the dialog never moves


class ConfirmModal(ModalScreen[bool], GoesBack, ButtonsDialog):
    """Dismisses with True when confirmed, False when cancelled (esc, q, the Cancel button)."""

    BINDINGS: ClassVar[list[BindingType]] = [*back_bindings("modal", "Cancel"), *button_keys("modal")]

    def __init__(
        self,
        title: str,
        body: str,
        *,
        confirm: str = "Confirm",
        danger: bool = False,
        default: Literal["confirm", "cancel"] = "cancel",
    ) -> None:
        super().__init__(classes="danger" if danger else "")
        self.title_text = title
        self.body = body
        self.confirm_label = confirm
        self.danger = danger
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.title_text, id="dialog-title")
            yield Static(self.body, id="dialog-body", markup=False)
            with Horizontal(id="dialog-buttons"):
                yield Button(self.confirm_label, id="confirm", variant="error" if self.danger else "primary")
                yield Button("Cancel", id="cancel")
            enter = self.confirm_label if self.default == "confirm" else "Cancel"
            yield Label(keys_hint(enter), id="dialog-keys")

    def on_mount(self) -> None:
        self.query_one(f"#{self.default}", Button).focus()

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#cancel")
    def leave(self) -> None:
        self.dismiss(False)


NOTE_ENTER = "Save note (keeps the decision)"


class NoteModal(ModalScreen[tuple[Decision, str] | None], GoesBack, ButtonsDialog):
    """A note on an item: Enter saves the note and keeps the decision; the buttons decide with it.

    Dismisses with (decision, note), or None. esc with a note typed and not saved asks first (q is
    text in the note; ←/→ move in it, and between the buttons once one has the focus).
    """

    BINDINGS: ClassVar[list[BindingType]] = [*back_bindings("note", "Cancel"), *button_keys("note")]

    def __init__(self, target: str, note: str = "", decision: Decision = "pending") -> None:
        super().__init__()
        self.target = target
        self.note = note
        self.decision = decision

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(f"Note on {self.target} (now {self.decision})", id="dialog-title")
            yield Input(value=self.note, placeholder="note (optional)", id="note")
            with Horizontal(id="dialog-buttons"):
                yield Button("Save note", id="save", variant="primary")
                yield Button("Approve", id="approved", variant="success")
                yield Button("Reject", id="rejected", variant="error")
                yield Button("Cancel", id="cancel")
            yield Label(keys_hint(NOTE_ENTER), id="dialog-keys")

    def enter_does(self) -> str:
        return NOTE_ENTER

    def _note(self) -> str:
        return self.query_one("#note", Input).value.strip()

    def unsaved_work(self) -> list[str]:
        if self._note() == self.note.strip():
            return []
        return [f"the note you are typing on {self.target} is not saved"]

    @on(Button.Pressed, "#save")
    @on(Input.Submitted, "#note")
    def _save(self) -> None:
        self.dismiss((self.decision, self._note()))

    @on(Button.Pressed, "#approved")
    def _approve(self) -> None:
        self.dismiss(("approved", self._note()))

    @on(Button.Pressed, "#rejected")
    def _reject(self) -> None:
        self.dismiss(("rejected", self._note()))

    @on(Button.Pressed, "#cancel")
    def _cancel(self) -> None:
        self.leave()
