"""The bar on top of every main screen: the screens (with the pending count), the backend, Dry run.

Data comes down by ``data_bind`` from the screen; a click on the switch goes up as ``DryRunToggled``.
Setting the switch from above never posts ``Switch.Changed``, so no echo can bounce between the two
(two ``D`` presses in one input batch once did exactly that, forever).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import Label, Static, Switch

from ovtui.app.messages import DryRunToggled
from ovtui.app.services import Tab

DRY_RUN_ON = "DRY RUN"
DRY_RUN_OFF = "Dry run off"  # the switch's name alone read as "on" to a new user
# Below this width the backend name gives way (the Run screen shows it) and the tabs close up, so
# every tab keeps its name at the 80-column floor (the last one used to wrap out of sight).
NARROW_BELOW = 100


class TopBar(Horizontal):
    DEFAULT_CSS = """
    TopBar { height: 1; background: $boost; }
    TopBar > #tabs { width: 1fr; padding: 0 1; }
    TopBar > #backend { width: auto; padding: 0 2; color: $text-muted; }
    TopBar.narrow > #backend { display: none; }
    TopBar > #dry-run-label { width: auto; padding: 0 1; }
    TopBar > #dry-run-label.on { text-style: bold reverse; color: $warning; }
    TopBar > Switch, TopBar > Switch:focus { width: auto; height: 1; border: none; padding: 0 1 0 0; }
    """

    dry_run: reactive[bool] = reactive(False)
    pending_count: reactive[int] = reactive(0)

    def __init__(self, current: str, tabs: Sequence[Tab], backend: str) -> None:
        super().__init__()
        self.current = current
        self.tabs = tuple(tabs)
        self.backend = backend

    def compose(self) -> ComposeResult:
        yield Static(self._tabs_text(), id="tabs")
        yield Label(self.backend, id="backend")
        yield Label(DRY_RUN_OFF, id="dry-run-label")
        switch = Switch(id="dry-run", tooltip="Apply writes only a dry-run record (D)")
        # D flips it and a click does: Tab never stops on it, where its focus border (a stray
        # "▊▔▔▔▔▔▎" over the bar's end) was all that showed and the screen's keys went to it.
        switch.can_focus = False
        yield switch

    def _tabs_text(self) -> Text:
        text = Text()
        for tab in self.tabs:
            label = tab.label
            if tab.shows_pending and self.pending_count:
                label = f"{label} ({self.pending_count})"
            text.append(f" {label} ", style="bold reverse" if tab.key == self.current else "")
            if not self.has_class("narrow"):
                text.append(" ")
        return text

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW_BELOW, "narrow")
        self.watch_pending_count()

    def watch_pending_count(self) -> None:
        for tabs in self.query("#tabs").results(Static):
            tabs.update(self._tabs_text())

    def watch_dry_run(self, dry_run: bool) -> None:
        for label in self.query("#dry-run-label").results(Label):
            label.update(DRY_RUN_ON if dry_run else DRY_RUN_OFF)
            label.set_class(dry_run, "on")
        for switch in self.query("#dry-run").results(Switch):
            with switch.prevent(Switch.Changed):
                switch.value = dry_run

    @on(Switch.Changed, "#dry-run")
    def _switch_flipped(self, event: Switch.Changed) -> None:
        event.stop()
        self.post_message(DryRunToggled(event.value))
