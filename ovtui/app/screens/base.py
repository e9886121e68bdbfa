"""What every screen shares: esc and q (``GoesBack``, ``back_bindings``); and what the main screens
share (``MainScreen``: the services, the top bar, reload pacing, errors).

esc and q mean the same on every screen: one step back. Inside a main screen that is from a pane or
a field back to the screen's list; from its list ``q`` quits; a pushed screen or a dialog closes.
A screen says what leaving it now would lose (``WORK_LOST``, or its own ``unsaved_work``), and the
app asks first when that is not nothing (``OvtuiApp.action_back`` and ``action_quit``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, ClassVar

from textual import on
from textual.app import App
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget

from ovtui.app.messages import WorkFailed
from ovtui.app.services import ScreenServices
from ovtui.app.widgets.top_bar import TopBar
from ovtui.wiring.workspace import Workspace

# A visible screen reloads at most this often while a run keeps changing the workspace.
RELOAD_DELAY_S = 0.5
# While a list cursor moves faster than this, the detail pane waits for it to stop.
FOLLOW_QUIET_S = 0.08


def report_error(node: App[Any] | Widget, doing: str, exc: BaseException) -> None:
    """Every failure ends here: a notification, never a crash."""
    # markup=False: kernel messages quote config sections like [trainer] and file text.
    node.notify(f"{doing}: {exc}", title="Error", severity="error", timeout=8, markup=False)


def back_bindings(context: str, description: str = "Back", *, main_screen: bool = False) -> list[BindingType]:
    """A screen's esc and q, with the ids ``<context>.back`` and ``<context>.back_q`` (remappable
    under ``[keys]``, listed by the help with the screen's other keys). Both go one step back; on a
    main screen's list q quits. In a text field q is text, and esc leaves the field."""
    return [
        Binding("escape", "app.back", description, id=f"{context}.back", show=not main_screen),
        Binding(
            "q",
            "app.back(True)",
            "Back / quit" if main_screen else description,
            id=f"{context}.back_q",
            show=False,
        ),
    ]


class GoesBack(Screen[Any]):
    """A screen esc and q take back from (its bindings: ``back_bindings``).

    ``WORK_LOST`` declares what leaving would lose: a worker group of the screen's, and the line
    that says what is lost while one of its workers runs (the app's question lists the lines).
    A modal names ``ModalScreen`` first and this second: Textual takes CSS (the dimmed background
    that shows the screen beneath) along each class's first base only.
    """

    WORK_LOST: ClassVar[dict[str, str]] = {}

    def unsaved_work(self) -> list[str]:
        """One line per thing leaving now (or quitting) would lose; empty when nothing would."""
        busy = {w.group for w in self.workers if w.node is self and w.is_running}
        return [line for group, line in self.WORK_LOST.items() if group in busy]

    def step_back(self) -> bool:
        """Go back a step inside the screen, if there is one to go (True); else esc leaves it."""
        return False

    def leave(self) -> None:
        """Close the screen as its cancel would (a dialog answers that nothing was chosen)."""
        self.dismiss(None)


class MainScreen(GoesBack, Screen[None]):
    """A screen of the registry. The app sets ``dry_run`` and ``pending_count``; the top bar binds them."""

    KEY: ClassVar[str] = ""
    # The widgets the screen's keys start from (its lists): esc and q come back to the first from
    # anywhere else on the screen (a pane, a filter); from these, q quits. () means AUTO_FOCUS.
    HOME: ClassVar[tuple[str, ...]] = ()
    dry_run: reactive[bool] = reactive(False)
    pending_count: reactive[int] = reactive(0)
    focus_plan: str | None = None  # a plan a run waits on when the screen was built (Review shows it)
    _stale_view: bool = False
    _reload_timer: Timer | None = None
    _follow_timer: Timer | None = None
    _last_follow: float = 0.0

    def __init__(self, services: ScreenServices) -> None:
        super().__init__()
        self.services = services

    @property
    def workspace(self) -> Workspace:
        return self.services.workspace

    def step_back(self) -> bool:
        home = [self.query_one(selector) for selector in self.HOME or (self.AUTO_FOCUS or "",) if selector]
        if self.focused is None or self.focused in home or not home:
            return False
        home[0].focus()
        return True

    def top_bar(self) -> TopBar:
        bar = TopBar(self.KEY, self.services.tabs, self.workspace.backend_label)
        return bar.data_bind(MainScreen.dry_run, MainScreen.pending_count)

    def report_error(self, doing: str, exc: BaseException) -> None:
        report_error(self, doing, exc)

    @on(WorkFailed)
    def _work_failed(self, message: WorkFailed) -> None:
        self.report_error(message.doing, message.error)

    def reload_soon(self, reload: Callable[[], object]) -> None:
        """Reload a hidden screen when it is shown again, a visible one after a short delay.

        A run applies a plan every few seconds: reloading 10,000 rows for a screen nobody looks at
        (or for every one of a burst of changes) would take the keys' time.
        """
        if not self.is_current:
            self._stale_view = True
            return
        if self._reload_timer is None:
            self._reload_timer = self.set_timer(RELOAD_DELAY_S, lambda: self._reload_now(reload))

    def _reload_now(self, reload: Callable[[], object]) -> None:
        self._reload_timer = None
        self._stale_view = False
        reload()

    def on_screen_resume(self) -> None:
        if self._stale_view:
            self._stale_view = False
            self.on_stale_view()

    def on_stale_view(self) -> None:
        """Reload what changed while the screen was hidden (screens with data override this)."""

    def follow_cursor(self, show: Callable[[], object]) -> None:
        """Show the detail of the row under the cursor: after a pause, right after the repaint that
        shows the cursor moved, and while a key repeats only once it stops, so a key never waits for
        a diff or a Markdown view to draw."""
        now = time.monotonic()
        quiet = now - self._last_follow >= FOLLOW_QUIET_S
        self._last_follow = now
        if self._follow_timer is not None:
            self._follow_timer.stop()
            self._follow_timer = None
        if quiet:
            self.call_after_refresh(show)
            return

        def later() -> None:
            self._follow_timer = None
            show()

        self._follow_timer = self.set_timer(FOLLOW_QUIET_S, later)

    def relative(self, uri: str | None) -> str:
        """A URI as a workspace-relative path (never a tmp or home path on screen)."""
        return self.workspace.reading.display_path(uri)
