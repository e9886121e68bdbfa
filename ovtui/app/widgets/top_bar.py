"""The bar on top of every main screen: the screens (with the pending count), the backend, Dry run."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, Static, Switch

if TYPE_CHECKING:
    from ovtui.app.app import OvtuiApp

TABS = (("run", "1 Run"), ("review", "2 Review"), ("history", "3 History"), ("memories", "4 Memories"))


class TopBar(Horizontal):
    DEFAULT_CSS = """
    TopBar { height: 3; background: $boost; }
    TopBar > #tabs { width: 1fr; padding: 1 1; }
    TopBar > #backend { width: auto; padding: 1 2; color: $text-muted; }
    TopBar > #dry-run-label { width: auto; padding: 1 0 1 1; }
    TopBar > Switch { width: auto; }
    """

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    @property
    def ovtui(self) -> OvtuiApp:
        return cast("OvtuiApp", self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="tabs")
        yield Label(self.ovtui.workspace.backend_label, id="backend")
        yield Label("Dry run", id="dry-run-label")
        yield Switch(value=self.ovtui.dry_run, id="dry-run", tooltip="Apply writes only a dry-run record (D)")

    def on_mount(self) -> None:
        self.watch(self.app, "pending_count", self._draw_tabs)
        self.watch(self.app, "dry_run", self._sync_switch)

    def _draw_tabs(self, pending: int) -> None:
        text = Text()
        for key, label in TABS:
            if key == "review" and pending:
                label = f"{label} ({pending})"
            text.append(f" {label} ", style="bold reverse" if key == self.current else "")
            text.append(" ")
        self.query_one("#tabs", Static).update(text)

    def _sync_switch(self, value: bool) -> None:
        self.query_one(Switch).value = value

    def on_switch_changed(self, event: Switch.Changed) -> None:
        event.stop()
        self.ovtui.dry_run = event.value
