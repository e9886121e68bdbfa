"""The Sessions screen: conversations committed to the workspace (``ovtui serve``, ``ovtui commit``,
``inbox/sessions/``), each commit's task and the memories it extracted; live as the files change."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from ovtui.app.messages import HistoryChanged, PendingChanged, SessionsChanged, WorkFailed, answer
from ovtui.app.screens.base import MainScreen, back_bindings
from ovtui.app.services import ScreenServices
from ovtui.app.widgets.footer import KeyFooter
from ovtui.app.widgets.vim_table import VimTable
from ovtui.sessions.overview import CommitView, SessionView, memory_label

NO_SESSIONS = (
    "No session yet. Sessions come from an agent that talks to OpenViking's session API: in this "
    "workspace's folder run\n\n    ovtui serve\n\nand point the agent's OpenViking URL at the address it "
    "prints first (http://127.0.0.1:1933 by default). Each commit shows here with what it extracted.\n\n"
    "Without an agent, commit a conversation (a JSON message per line):\n\n"
    "    ovtui commit . chat.jsonl\n\nor drop it into inbox/sessions/ while ovtui serve runs."
)
STATUS_STYLE = {"completed": "green", "failed": "red", "running": "yellow", "pending": "cyan"}


def session_row(view: SessionView) -> tuple[str, str, str, Text]:
    status = view.last_status
    return (
        view.session_id,
        str(view.live_messages),
        str(len(view.commits)),
        Text(status, STATUS_STYLE.get(status, "")),
    )


def session_detail(view: SessionView) -> Text:
    text = Text()
    text.append(f"session {view.session_id}", "bold")
    text.append(f"  ·  {view.live_messages} message(s) not committed yet\n")
    if view.error:
        text.append(f"{view.error}\n", "red")
    if not view.commits:
        text.append("\nno commits yet\n", "dim")
    for commit in reversed(view.commits):
        text.append(f"\n{commit.archive}", "bold")
        text.append(f"  {commit.messages} message(s)  ")
        text.append(commit.task_status, STATUS_STYLE.get(commit.task_status, ""))
        if commit.task_id:
            text.append(f"  {commit.task_id}", "dim")
        text.append("\n")
        if commit.task_error:
            text.append(f"  error: {commit.task_error}\n", "red")
        extracted = commit.extracted
        if extracted:
            counts = [counted(n, kind) for kind, n in sorted(extracted.items()) if n]
            text.append(f"  extracted: {', '.join(counts) or 'nothing'}\n")
        diff = commit.diff
        if diff is None:
            continue
        s = diff.summary
        text.append(f"  memory_diff: +{s.total_adds} ~{s.total_updates} -{s.total_deletes}\n")
        for uri in diff.operations.uris():
            text.append(f"    {memory_label(uri)}\n", "dim")
        peers_text(commit, text)
        if commit.waiting:
            text.append(f"  waiting in Review: {', '.join(commit.waiting)}\n", "yellow")
    return text


# How a count of a memory type reads: (one, many); the types are named in the plural, profile aside.
_NOUNS = {
    "cases": ("case", "cases"),
    "entities": ("entity", "entities"),
    "preferences": ("preference", "preferences"),
    "events": ("event", "events"),
    "profile": ("profile fact", "profile facts"),
}


def counted(n: int, kind: str) -> str:
    """``1 case``, ``2 cases``, ``1 profile fact``: a count with its noun agreeing."""
    one, many = _NOUNS.get(kind, (kind, kind))
    return f"{n} {one if n == 1 else many}"


def _memories(n: object) -> str:
    return f"{n} memor{'y' if n == 1 else 'ies'}"


def peers_text(commit: CommitView, text: Text) -> None:
    """Whose memories the commit wrote besides the user's, and the peers it skipped (and why)."""
    for peer, counts in sorted(commit.peers.items()):
        files = counts.get("files_written", 0)
        text.append(f"  peer {peer}: {_memories(counts.get('memories', 0))}, {files} file(s) written\n")
    for skipped in commit.peers_skipped:
        text.append(
            f"  skipped peer {skipped.get('peer_id')}: {_memories(skipped.get('memories'))}, "
            f"{skipped.get('reason')}\n",
            "yellow",
        )


class SessionsScreen(MainScreen):
    KEY = "sessions"
    AUTO_FOCUS = "#sessions"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Refresh", id="sessions.reload"),
        Binding("l", "focus_detail", "Detail", id="sessions.detail", show=False),
        Binding("h", "focus_sessions", "Sessions", id="sessions.list", show=False),
        *back_bindings("sessions", main_screen=True),
    ]

    class Loaded(Message, bubble=False):
        """Every session, read by the screen's thread worker."""

        def __init__(self, views: list[SessionView]) -> None:
            super().__init__()
            self.views = views

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self.views: dict[str, SessionView] = {}
        self.selected: str | None = None

    def compose(self) -> ComposeResult:
        yield self.top_bar()
        with Horizontal(id="sessions-body"):
            yield VimTable(id="sessions")
            with VerticalScroll(id="session-detail"):
                yield Static("no session selected", id="session-text")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#sessions", VimTable)
        table.add_columns("session", "live", "commits", "last task")
        self.load()

    @work(thread=True, exclusive=True, group="sessions-list")
    def load(self) -> None:
        try:
            views = self.workspace.reading.session_views()
        except Exception as exc:
            answer(self, WorkFailed("reading the sessions", exc))
            return
        answer(self, self.Loaded(views))

    @on(Loaded)
    def _fill(self, message: Loaded) -> None:
        views = message.views
        self.views = {v.session_id: v for v in views}
        self.query_one("#sessions", VimTable).fill([(v.session_id, session_row(v)) for v in views])
        if self.selected in self.views:
            self._show(self.selected)
        elif not views:
            self.selected = None
            self.query_one("#session-text", Static).update(Text(NO_SESSIONS))

    @on(VimTable.RowHighlighted, "#sessions")
    def _highlighted(self, event: VimTable.RowHighlighted) -> None:
        self._show(event.key)

    def _show(self, session_id: str) -> None:
        self.selected = session_id
        view = self.views.get(session_id)
        if view is not None:
            self.query_one("#session-text", Static).update(session_detail(view))

    def action_reload(self) -> None:
        self.load()

    def action_focus_detail(self) -> None:
        self.query_one("#session-detail", VerticalScroll).focus()

    def action_focus_sessions(self) -> None:
        self.query_one("#sessions", VimTable).focus()

    def on_sessions_changed(self, _: SessionsChanged) -> None:
        self.reload_soon(self.load)

    def on_history_changed(self, _: HistoryChanged) -> None:
        self.reload_soon(self.load)

    def on_pending_changed(self, _: PendingChanged) -> None:
        self.reload_soon(self.load)  # a plan of a commit applied or discarded no longer waits

    def on_stale_view(self) -> None:
        self.load()
