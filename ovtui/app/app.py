"""OvtuiApp: the main screens of the registry (as modes) over one Workspace, fed by kernel events and
the file watcher.

The app holds no learning logic: it calls the ``Workspace`` facade (its use cases and read models)
and shows what the kernel reports. A run lives in a worker process (``RunProcess``), so its CPU
never competes with the keys; everything else the app asks of the kernel runs in Textual workers:
async workers await the facade's coroutines (which keep the loop free), thread workers make its
synchronous calls and post what they found as messages. Screens get what they need when they are
built (``ScreenServices``) and tell the app what they did with messages.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from functools import partial
from typing import ClassVar

from textual import events, on, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import reactive
from textual.theme import Theme

from ovtui.app.commands import BindingCommands
from ovtui.app.editor import Editor, external_editor
from ovtui.app.keys import catalog, own_bindings
from ovtui.app.messages import (
    DryRunToggled,
    EventPump,
    ExperiencesChanged,
    HistoryChanged,
    InboxFilesArrived,
    KernelEventsReady,
    MemoriesChanged,
    PendingChanged,
    RunEvents,
    SessionsChanged,
    WorkFailed,
    WorkspaceEdited,
    answer,
)
from ovtui.app.registry import SCREENS, ScreenEntry, binding_sources, screen_bindings, tabs
from ovtui.app.screens.base import GoesBack, MainScreen, report_error
from ovtui.app.screens.confirm import ConfirmModal, when_confirmed
from ovtui.app.screens.help import HelpScreen
from ovtui.app.screens.too_small import TooSmallScreen, too_small
from ovtui.app.services import ScreenServices
from ovtui.app.textual_private import styles_are_current
from ovtui.checks.keymap import DeclaredBinding, keymap_problems
from ovtui.storage.watching import ChangeKind, WorkspaceChanges
from ovtui.wiring.workspace import Workspace

# gc's third threshold: middle-generation collections between two full ones (Python's default: 10).
FULL_COLLECTION_THRESHOLD = 100


class StaleMarked(Message, bubble=False):
    """The app's stale check marked items of these pending plans (their target files changed)."""

    def __init__(self, plan_ids: list[str]) -> None:
        super().__init__()
        self.plan_ids = plan_ids


class QuitModal(ConfirmModal):
    """The question before quitting would lose work; ctrl+q again while it shows quits."""


class OvtuiApp(App[None]):
    CSS_PATH = "ovtui.tcss"
    TITLE = "ovtui"
    COMMANDS = App.COMMANDS | {BindingCommands}
    DEFAULT_MODE = SCREENS[0].key
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
        *screen_bindings(),
        Binding("question_mark", "help", "Help", id="app.help"),
        Binding("D", "toggle_dry_run", "Dry run", id="app.dry_run", show=False),
    ]

    dry_run: reactive[bool] = reactive(False, init=False)
    pending_count: reactive[int] = reactive(0, init=False)

    def __init__(
        self, workspace: Workspace, *, editor: Editor | None = None, watch_files: bool = True
    ) -> None:
        super().__init__()
        self.workspace = workspace
        self.pump = EventPump(self)
        self.watch_files = watch_files
        self._gc_thresholds = gc.get_threshold()  # restored when the app ends
        # The plan a run parked last and waits on: Review opens on it (a screen built later too).
        self.waiting_plan: str | None = None
        self.keymap: dict[str, str] = dict(workspace.config.keys)
        self.services = ScreenServices(
            workspace=workspace,
            listener=self.pump,
            editor=editor or external_editor(self),
            tabs=tabs(self.keymap),
        )
        # The screens built so far, by mode: the app's broadcasts reach these.
        self.main_screens: dict[str, MainScreen] = {}
        for entry in SCREENS:
            self.add_mode(entry.key, partial(self._build_screen, entry))
        self.set_reactive(OvtuiApp.dry_run, workspace.config.review.dry_run)

    def _build_screen(self, entry: ScreenEntry) -> MainScreen:
        screen = entry.screen(self.services)
        screen.set_reactive(MainScreen.dry_run, self.dry_run)
        screen.set_reactive(MainScreen.pending_count, self.pending_count)
        screen.focus_plan = self.waiting_plan
        if self.screen_stack:  # built while another screen shows: the stylesheet is set up
            styles_are_current(screen, self)  # so its first showing needs no CSS re-parse
        self.main_screens[entry.key] = screen
        return screen

    # --- start and stop ------------------------------------------------------------------------
    def on_mount(self) -> None:
        # Full collections ten times rarer: while 10,000 experiences load, one ran every half second
        # and stopped the app for 0.05-0.2 s each time (young cycles are still collected as often).
        gc.set_threshold(*self._gc_thresholds[:2], FULL_COLLECTION_THRESHOLD)
        self._apply_theme(self.workspace.config.ui.theme)
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        if self.keymap:
            self.set_keymap(self.keymap)
            for _, problem in keymap_problems(self.keymap, declared_bindings()):  # else a typo does nothing
                self.notify(f"ovtui.toml {problem}", severity="warning", timeout=10, markup=False)
        self.refresh_pending_count()
        if self.watch_files:
            self._watch_workspace()
        if self.pending_count:
            self.refresh_stale()
        self._check_size()

    def on_resize(self, event: events.Resize) -> None:
        self._check_size(event.size.width, event.size.height)  # runs before App updates self.size

    def _check_size(self, width: int | None = None, height: int | None = None) -> None:
        """Below the floor, say so instead of hiding panes silently; go back once it fits again."""
        if width is None or height is None:
            width, height = self.size
        screen = self.screen
        if too_small(width, height):
            if isinstance(screen, TooSmallScreen):
                screen.show_size(width, height)
            else:
                self.push_screen(TooSmallScreen(width, height))
        elif isinstance(screen, TooSmallScreen):
            self.pop_screen()

    async def on_unmount(self) -> None:
        gc.unfreeze()  # what the big lists froze (VimTable.fill)
        gc.set_threshold(*self._gc_thresholds)
        await self.workspace.aclose()  # the connections an apply or a summary opened in this loop

    def _apply_theme(self, name: str) -> None:
        if name in self.available_themes:
            self.theme = name
        else:
            self.notify(f"[ui] theme {name!r} is not a known theme", severity="warning", markup=False)

    def _remember_theme(self, theme: Theme) -> None:
        try:
            self.workspace.save_theme(theme.name)
        except OSError as exc:
            self.notify(f"could not save the theme to ovtui.toml: {exc}", severity="warning")

    # --- actions -------------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if isinstance(self.screen, TooSmallScreen):
            return action == "quit"  # nothing else until the terminal is large enough again
        return True

    async def action_quit(self) -> None:
        """Quit, after asking when that would lose work: a run in progress, a half-typed note, a
        decision or an apply still being written."""
        lost = [] if isinstance(self.screen, QuitModal) else self.work_in_progress()
        if not lost:
            self.exit()
            return
        body = "Quitting now loses work:\n" + lines(lost)
        modal = QuitModal("Quit ovtui?", body + "\n\nctrl+q again quits.", confirm="Quit", danger=True)
        self.push_screen(modal, when_confirmed(self.exit))

    def work_in_progress(self) -> list[str]:
        """What every screen built so far (and every one pushed on the current one) would lose."""
        lost = []
        for screen in dict.fromkeys([*self.main_screens.values(), *self.screen_stack]):
            if isinstance(screen, GoesBack):
                lost += screen.unsaved_work()
        return lost

    async def action_back(self, quit_at_top: bool = False) -> None:
        """esc and q on every screen: a step back inside it; else a pushed screen or a dialog closes
        (after asking when that loses work, a "no" keeps it), and from a main screen q quits."""
        screen = self.screen
        if not isinstance(screen, GoesBack) or screen.step_back():
            return
        if isinstance(screen, MainScreen):
            if quit_at_top:
                await self.action_quit()
            return
        lost = screen.unsaved_work()
        if not lost:
            screen.leave()
            return
        body = "Going back now loses work:\n" + lines(lost)
        modal = ConfirmModal("Discard it?", body, confirm="Discard", danger=True)
        self.push_screen(modal, when_confirmed(screen.leave))

    async def action_show(self, mode: str) -> None:
        if self.current_mode != mode:
            await self.switch_mode(mode)
            self._check_size()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            shown = next((e.title for e in SCREENS if isinstance(self.screen, e.screen)), None)
            self.push_screen(HelpScreen(catalog(self, binding_sources(type(self)), self.keymap), shown))

    def action_toggle_dry_run(self) -> None:
        self.dry_run = not self.dry_run

    @on(DryRunToggled)
    def _dry_run_toggled(self, message: DryRunToggled) -> None:
        self.dry_run = message.dry_run  # the same value twice changes nothing and notifies once

    def watch_dry_run(self, dry_run: bool) -> None:
        for screen in self.main_screens.values():
            screen.dry_run = dry_run
        if dry_run:
            self.notify("DRY RUN on: Apply writes only a dry-run record, no experience file", title="Dry run")
        else:
            self.notify("Dry run off: Apply writes the experience files", title="Dry run")

    def watch_pending_count(self, count: int) -> None:
        for screen in self.main_screens.values():
            screen.pending_count = count

    # --- broadcasting --------------------------------------------------------------------------
    def broadcast(self, make: Callable[[], Message]) -> None:
        for screen in list(self.main_screens.values()):
            screen.post_message(make())

    def report_error(self, doing: str, exc: BaseException) -> None:
        report_error(self, doing, exc)

    @on(WorkFailed)
    def _work_failed(self, message: WorkFailed) -> None:
        self.report_error(message.doing, message.error)

    def refresh_pending_count(self) -> None:
        try:
            self.pending_count = len(self.workspace.review.pending_plans())
        except Exception as exc:
            self.report_error("reading pending plans", exc)

    def pending_changed(self, focus: str | None = None) -> None:
        self.refresh_pending_count()
        self.broadcast(lambda: PendingChanged(focus))

    @on(WorkspaceEdited)
    def _workspace_edited(self, message: WorkspaceEdited) -> None:
        if message.pending:
            self.pending_changed()
        if message.history:
            self.broadcast(HistoryChanged)
        if message.experiences:
            self.broadcast(ExperiencesChanged)
            if self.pending_count:
                self.refresh_stale()

    # --- runs ----------------------------------------------------------------------------------
    # A run computes in its own process (RunProcess), so nothing here competes with it for the GIL.
    def on_kernel_events_ready(self, _: KernelEventsReady) -> None:
        events = self.pump.drain()
        if not events:
            return
        for event in events:
            if event.kind == "plan_pending":
                stale = " (stale items)" if event.data.get("stale") else ""
                waiting = bool(event.data.get("waiting"))
                waits = "; the run waits for you (A on Run approves the rest)" if waiting else ""
                self.notify(
                    f"plan {event.data.get('plan_id')} with {event.data.get('items')} item(s) "
                    f"waits for review{stale}: press 2{waits}",
                    title="Waiting for your review" if waiting else "Review",
                )
                plan_id = event.data.get("plan_id")
                self.waiting_plan = str(plan_id) if plan_id else None
                self.pending_changed(focus=self.waiting_plan)
            elif event.kind == "plan_applied":
                self.broadcast(HistoryChanged)
                self.broadcast(ExperiencesChanged)
                self.pending_changed()
        self.broadcast(lambda: RunEvents(events))

    # --- watching the workspace ----------------------------------------------------------------
    @work(exclusive=True, group="watch")
    async def _watch_workspace(self) -> None:
        try:
            async for changes in self.workspace.reading.watch():
                self._workspace_changed(changes)
        except Exception as exc:
            self.report_error("watching the workspace stopped", exc)

    def _workspace_changed(self, changes: WorkspaceChanges) -> None:
        if ChangeKind.EXPERIENCE in changes:
            self.broadcast(ExperiencesChanged)
            self.refresh_stale()
        if ChangeKind.MEMORY in changes:
            self.broadcast(MemoriesChanged)
            if ChangeKind.EXPERIENCE not in changes:
                self.refresh_stale()  # a pending item may target a preference, an entity, ...
        if ChangeKind.PENDING in changes:
            self.pending_changed()
        if ChangeKind.HISTORY in changes:
            self.broadcast(HistoryChanged)
        if ChangeKind.SESSION in changes:
            self.broadcast(SessionsChanged)
        if changes.new_inbox_files:
            paths = [str(path) for path in changes.new_inbox_files]
            self.broadcast(lambda: InboxFilesArrived(paths))

    @work(thread=True, exclusive=True, group="stale")
    def refresh_stale(self) -> None:
        """Mark pending items whose target file changed since planning (after an outside edit)."""
        try:
            changed = self.workspace.review.refresh_stale()
        except Exception as exc:
            answer(self, WorkFailed("checking pending plans for stale items", exc))
            return
        if changed:
            answer(self, StaleMarked(changed))

    @on(StaleMarked)
    def _stale_marked(self, message: StaleMarked) -> None:
        self.pending_changed()
        self.notify(
            f"{len(message.plan_ids)} pending plan(s) changed: the memories they edit were changed",
            title="Stale",
            severity="warning",
        )


def lines(items: list[str]) -> str:
    return "\n".join(f"  • {item}" for item in items)


def declared_bindings() -> list[DeclaredBinding]:
    """Every remappable binding of the app as plain data, for ``ovtui check`` (the kernel never
    imports Textual; the CLI imports this only to check ``[keys]``)."""
    main_screens = {entry.title for entry in SCREENS}
    return [
        DeclaredBinding(
            context,
            binding.id or "",
            tuple(k.strip() for k in binding.key.split(",")),
            main_screen=context in main_screens,
        )
        for context, node_class in binding_sources(OvtuiApp)
        for binding in own_bindings(node_class)
    ]
