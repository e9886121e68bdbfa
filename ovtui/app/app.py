"""OvtuiApp: four screens (modes) over one Workspace, fed by kernel events and the file watcher.

The app holds no learning logic: it calls ``Workspace`` (train, evaluate, apply_pending, the
pending plans, the history) and shows what the kernel reports. Kernel coroutines run on the
``KernelThread``; workspace reads that may be slow run in thread workers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.message import Message
from textual.reactive import reactive
from textual.screen import Screen
from textual.theme import Theme

from ovtui.app.commands import BindingCommands
from ovtui.app.editor import Editor, external_editor
from ovtui.app.kernel_thread import KernelThread
from ovtui.app.messages import (
    EventPump,
    ExperiencesChanged,
    FilesChanged,
    HistoryChanged,
    KernelEventsReady,
    PendingChanged,
    RunEvents,
)
from ovtui.app.screens.confirm import ConfirmModal
from ovtui.app.screens.evidence import EvidenceScreen
from ovtui.app.screens.help import HelpScreen
from ovtui.app.screens.history import HistoryScreen
from ovtui.app.screens.memories import MemoriesScreen
from ovtui.app.screens.review import ReviewScreen
from ovtui.app.screens.run import RunScreen
from ovtui.app.widgets.vim_table import VimTable
from ovtui.config import save_config
from ovtui.service import Workspace
from ovtui.workspace.watching import ChangeKind, watch_workspace

MAIN_SCREENS = ("run", "review", "history", "memories")


class OvtuiApp(App[None]):
    CSS_PATH = "ovtui.tcss"
    TITLE = "ovtui"
    COMMANDS = App.COMMANDS | {BindingCommands}
    MODES: ClassVar[dict[str, str | Callable[[], Screen[Any]]]] = {
        "run": RunScreen,
        "review": ReviewScreen,
        "history": HistoryScreen,
        "memories": MemoriesScreen,
    }
    DEFAULT_MODE = "run"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
        Binding("1", "show('run')", "Run", id="app.run_screen"),
        Binding("2", "show('review')", "Review", id="app.review_screen"),
        Binding("3", "show('history')", "History", id="app.history_screen"),
        Binding("4", "show('memories')", "Memories", id="app.memories_screen"),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("D", "toggle_dry_run", "Dry run", id="app.dry_run", show=False),
    ]

    dry_run: reactive[bool] = reactive(False)
    pending_count: reactive[int] = reactive(0)

    def __init__(
        self, workspace: Workspace, *, editor: Editor | None = None, watch_files: bool = True
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self.kernel = KernelThread()
        self.pump = EventPump(self)
        self.editor: Editor = editor or external_editor(self)
        self.watch_files = watch_files
        self.keymap: dict[str, str] = dict(workspace.config.keys)
        # Screens register here while mounted, so broadcasts reach only live screens.
        self.main_screens: dict[str, Screen[None]] = {}
        self.set_reactive(OvtuiApp.dry_run, workspace.config.review.dry_run)

    def binding_sources(self) -> list[tuple[str, type[DOMNode]]]:
        """Where the help screen reads the bindings from."""
        return [
            ("App", type(self)),
            ("Run", RunScreen),
            ("Review", ReviewScreen),
            ("History", HistoryScreen),
            ("Memories", MemoriesScreen),
            ("Lists", VimTable),
            ("Evidence", EvidenceScreen),
            ("Dialogs", ConfirmModal),
            ("Help", HelpScreen),
        ]

    # --- start and stop ------------------------------------------------------------------------
    def on_mount(self) -> None:
        self._apply_theme(self.workspace.config.ui.theme)
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        if self.keymap:
            self.set_keymap(self.keymap)
        self.refresh_pending_count()
        if self.watch_files:
            self._watch_workspace()
        if self.pending_count:
            self.refresh_stale()

    def on_unmount(self) -> None:
        self.kernel.stop()

    def _apply_theme(self, name: str) -> None:
        if name in self.available_themes:
            self.theme = name
        else:
            self.notify(f"[ui] theme {name!r} is not a known theme", severity="warning", markup=False)

    def _remember_theme(self, theme: Theme) -> None:
        config = self.workspace.config
        if config.ui.theme == theme.name:
            return
        config.ui.theme = theme.name
        try:
            save_config(self.workspace.root, config)
        except OSError as exc:
            self.notify(f"could not save the theme to ovtui.toml: {exc}", severity="warning")

    # --- actions -------------------------------------------------------------------------------
    async def action_show(self, mode: str) -> None:
        if self.current_mode != mode:
            await self.switch_mode(mode)

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_dry_run(self) -> None:
        self.dry_run = not self.dry_run

    # --- broadcasting --------------------------------------------------------------------------
    def broadcast(self, make: Callable[[], Message]) -> None:
        for screen in list(self.main_screens.values()):
            screen.post_message(make())

    def report_error(self, doing: str, exc: BaseException) -> None:
        """Every failure ends here: a notification, never a crash."""
        # markup=False: kernel messages quote config sections like [trainer] and file text.
        self.notify(f"{doing}: {exc}", title="Error", severity="error", timeout=8, markup=False)

    def refresh_pending_count(self) -> None:
        try:
            self.pending_count = len(self.workspace.pending.list())
        except Exception as exc:
            self.report_error("reading pending plans", exc)

    def pending_changed(self) -> None:
        self.refresh_pending_count()
        self.broadcast(PendingChanged)

    # --- kernel events -------------------------------------------------------------------------
    def on_kernel_events_ready(self, _: KernelEventsReady) -> None:
        events = self.pump.drain()
        if not events:
            return
        for event in events:
            if event.kind == "plan_pending":
                stale = " (stale items)" if event.data.get("stale") else ""
                self.notify(
                    f"plan {event.data.get('plan_id')} with {event.data.get('items')} item(s) "
                    f"waits for review{stale}: press 2",
                    title="Review",
                )
                self.pending_changed()
            elif event.kind == "plan_applied":
                self.broadcast(HistoryChanged)
                self.broadcast(ExperiencesChanged)
                self.pending_changed()
        self.broadcast(lambda: RunEvents(events))

    # --- watching the workspace ----------------------------------------------------------------
    @work(exclusive=True, group="watch")
    async def _watch_workspace(self) -> None:
        try:
            async for changes in watch_workspace(self.workspace.paths):
                self.on_files_changed(FilesChanged(changes))
        except Exception as exc:
            self.report_error("watching the workspace stopped", exc)

    def on_files_changed(self, message: FilesChanged) -> None:
        changes = message.changes
        if ChangeKind.EXPERIENCE in changes:
            self.broadcast(ExperiencesChanged)
            self.refresh_stale()
        if ChangeKind.PENDING in changes:
            self.pending_changed()
        if ChangeKind.HISTORY in changes:
            self.broadcast(HistoryChanged)
        if changes.new_inbox_files:
            self.broadcast(lambda: FilesChanged(changes))

    @work(thread=True, exclusive=True, group="stale")
    def refresh_stale(self) -> list[str]:
        """Mark pending items whose experience changed since planning (after an outside edit)."""
        try:
            changed = self.workspace.pending.refresh_stale(self.workspace.experiences())
        except Exception as exc:
            self.call_from_thread(self.report_error, "checking pending plans for stale items", exc)
            return []
        if changed:
            self.call_from_thread(self.pending_changed)
            self.call_from_thread(
                self.notify,
                f"{len(changed)} pending plan(s) changed: their experiences were edited",
                title="Stale",
                severity="warning",
            )
        return changed
