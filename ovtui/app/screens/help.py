"""The help screen: the bindings of the screen it was opened on (``a``: of every screen), each with
its key (after ``[keys]`` remaps), id and description; and the footer that always says how to open it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.cells import cell_len
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Footer, Label

from ovtui.app.keys import BindingInfo
from ovtui.app.screens.base import GoesBack, back_bindings
from ovtui.app.textual_private import footer_key, footer_key_of, footer_key_shown
from ovtui.app.widgets.footer import KeyFooter
from ovtui.app.widgets.vim_table import VimTable

TITLE = (
    "Keys  (tab moves the focus, l focuses a diff and h goes back; remap any id under \\[keys] in "
    "ovtui.toml; ctrl+p lists them as commands)"
)
# Shown with every screen's own keys: the app's, the lists', and the help's own.
ALWAYS = frozenset({"App", "Lists", "Help"})
WITH_DIFF = frozenset({"Review", "History"})  # the screens that show a field diff


HELP_BINDING_ID = "app.help"
KEY_GAP = 1  # a compact footer's margin after each key
HELP_KEY_EDGE = 2  # the help key's border on its left and its padding on its right


def key_width(widget: Widget) -> int:
    """The columns a compact footer's key takes: its key, a space and its description."""
    shown = footer_key_shown(widget)
    if shown is None:
        return 0
    key, description = shown
    return cell_len(key) + (1 + cell_len(description) if description else 0)


class HintFooter(KeyFooter):
    """A compact footer whose right end is always the help key (``? keys``), where the command
    palette's key was: at 80 columns a screen's keys do not all fit, and the ones cut off must
    still be findable. The palette's key (ctrl+p) is named in the help's title. A key that would
    not fit whole before the help key is left out, never drawn cut (``u U▏`` read as two keys)."""

    # The key docked at the right end lands one column short of the edge (where the cut-off keys
    # beneath showed through): shifted onto it, with the full footer's right padding.
    DEFAULT_CSS = """
    HintFooter.-compact FooterKey.-command-palette { padding-right: 1; offset-x: 1; }
    """

    ALSO_SHOWN = frozenset({HELP_BINDING_ID})

    def __init__(self) -> None:
        super().__init__(compact=True, show_command_palette=False)

    def shown_from(self) -> tuple[Any, ...]:
        return (*super().shown_from(), self.app.size.width)  # a resize can fit more keys, or fewer

    def on_resize(self) -> None:
        self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        active = self.screen.active_bindings.values()
        help_binding = next((b.binding for b in active if b.binding.id == HELP_BINDING_ID), None)
        help_key = None if help_binding is None else self._help_key(help_binding)
        room = self.app.size.width - (0 if help_key is None else key_width(help_key) + HELP_KEY_EDGE)
        shown = False  # the footer shows nothing until the screen's bindings are ready
        for widget in super().compose():
            shown = True
            if help_binding is not None and footer_key_of(widget) == help_binding.key:
                continue
            room -= key_width(widget) + KEY_GAP
            if room < -KEY_GAP:  # the last key needs no gap after it
                break  # the keys are in the order of importance: the rest is in the help
            yield widget
        if shown and help_key is not None:
            yield help_key

    def _help_key(self, binding: Binding) -> Widget:
        key = footer_key(binding.key, self.app.get_key_display(binding), "keys", binding.action, right=True)
        return key.data_bind(compact=Footer.compact)


class HelpScreen(ModalScreen[None], GoesBack):
    BINDINGS: ClassVar[list[BindingType]] = [
        *back_bindings("help", "Close"),
        Binding("a", "toggle_all", "All screens", id="help.all"),
    ]

    def __init__(self, bindings: Sequence[BindingInfo], screen: str | None = None) -> None:
        super().__init__()
        self.bindings = list(bindings)
        self.screen_title = screen  # the screen it was opened on; None: every screen's keys
        self.show_all = screen is None

    def compose(self) -> ComposeResult:
        with Vertical(id="help"):
            yield Label(self._title(), id="help-title")
            yield VimTable(id="help-table")  # j/k/g/G as in every list (the README's "Lists")

    def on_mount(self) -> None:
        table = self.query_one("#help-table", VimTable)
        table.add_columns("screen", "key", "action", "id")
        self._fill()
        table.focus()

    def _title(self) -> str:
        which = "every screen" if self.show_all else f"{self.screen_title} (a: every screen)"
        return f"{TITLE}\nShowing the keys of {which} · j/k or ↓/↑ scroll · esc or q closes"

    def _shown(self, info: BindingInfo) -> bool:
        if self.show_all or info.context in ALWAYS or info.context == self.screen_title:
            return True
        return info.context == "Diff" and self.screen_title in WITH_DIFF

    def _fill(self) -> None:
        table = self.query_one("#help-table", VimTable)
        table.clear()
        for info in self.bindings:
            if self._shown(info):
                table.add_row(info.context, info.keys, info.description, info.id)

    def action_toggle_all(self) -> None:
        if self.screen_title is None:
            return
        self.show_all = not self.show_all
        self.query_one("#help-title", Label).update(self._title())
        self._fill()
