"""The Memories screen: every declared memory type, one at a time (experiences first), and one file.

The type filter (a Select, or ``t`` to step through the types) chooses what the table lists: name,
status, version, last change and links of each file; the view on the right shows the file as
Markdown. Experiences come from the workspace's policy snapshot; other types are read from disk.
"""

from __future__ import annotations

import os
import time
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Label, Select

from ovtui.app.messages import ExperiencesChanged, MemoriesChanged
from ovtui.app.screens.base import MainScreen
from ovtui.app.services import ScreenServices
from ovtui.app.widgets.text_markdown import TextMarkdown
from ovtui.app.widgets.vim_table import Rows, VimTable
from ovtui.core.domain import Experience, ExperienceSet
from ovtui.core.errors import OvtuiError
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.hotness import HotnessLog, Usage, hotness_score
from ovtui.memory.types import EXPERIENCES
from ovtui.train.review.gates.readability import unread_notes


@dataclass(frozen=True)
class MemoryRow:
    uri: str
    name: str
    status: str
    version: int
    changed: str
    links: int
    content: str
    hot: float = 0.0  # hotness: uses and recency (seed 004 §3.7); 0 when never used

    def cells(self) -> tuple[Text, ...]:
        # Text, not str: a str cell is parsed as markup each time the table measures it.
        hot = f"{self.hot:.2f}" if self.hot else "–"
        cells = (self.name, self.status, str(self.version), self.changed, str(self.links), hot)
        return tuple(Text(cell) for cell in cells)


def changed_at(path: str) -> str:
    try:
        return minute(os.stat(path).st_mtime)
    except OSError:
        return "?"


def minute(mtime: float) -> str:
    return datetime.fromtimestamp(mtime, UTC).strftime("%Y-%m-%d %H:%M")


def changed_in(folder: Path, uri_prefix: str) -> dict[str, str]:
    """The last change of each file right in ``folder``, by URI: one scandir instead of a checked
    path and a stat per file (10,000 of those took a third of a second)."""
    changed: dict[str, str] = {}
    with suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            with suppress(OSError):
                changed[uri_prefix + entry.name] = minute(entry.stat().st_mtime)
    return changed


class MemoriesScreen(MainScreen):
    KEY = "memories"
    AUTO_FOCUS = "#memories"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+l", "reload", "Reload", id="memories.reload"),
        Binding("t", "next_type", "Type", id="memories.next_type"),
        Binding("l", "focus_view", "Read", id="memories.read", show=False),
        Binding("h", "focus_table", "List", id="memories.list", show=False),
    ]

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self.rows: dict[str, MemoryRow] = {}
        self.shown: str | None = None
        self.memory_type = EXPERIENCES
        # The last full load of the experiences: a reload re-reads only the files that changed since.
        self._loaded: ExperienceSet | None = None
        self._usage: dict[str, Usage] = {}  # uses by URI, read once per load

    def compose(self) -> ComposeResult:
        yield self.top_bar()
        with Horizontal(id="memories-head"):
            types = self.workspace.store.registry.browse_order()
            yield Select(
                [(t, t) for t in types], value=EXPERIENCES, allow_blank=False, id="memory-type", compact=True
            )
            yield Label("loading experiences…", id="memories-title", classes="pane-title")
        with Horizontal(id="memories-body"):
            yield VimTable(id="memories")
            with VerticalScroll(id="memory-view"):
                yield TextMarkdown(id="memory-markdown")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#memories", VimTable)
        table.add_columns("name", "status", "version", "changed (UTC)", "links", "hot")
        self._show_preview()
        # The whole list is read once the first rows are painted: its thread would slow that paint.
        self.call_after_refresh(self.action_reload)

    def action_reload(self) -> None:
        self._load(self.memory_type)

    def action_next_type(self) -> None:
        types = self.workspace.store.registry.browse_order()
        select = self.query_one("#memory-type", Select)
        select.value = types[(types.index(self.memory_type) + 1) % len(types)]

    @on(Select.Changed, "#memory-type")
    def _type_chosen(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.memory_type:
            self.memory_type = event.value
            self.query_one("#memories-title", Label).update(f"loading {event.value}…")
            self.action_reload()

    def on_experiences_changed(self, _: ExperiencesChanged) -> None:
        # Also sent after an apply or a revert in the app, which may have written any type.
        self.reload_soon(self.action_reload)

    def on_memories_changed(self, _: MemoriesChanged) -> None:
        if self.memory_type != EXPERIENCES:
            self.reload_soon(self.action_reload)

    def on_stale_view(self) -> None:
        self.action_reload()

    @work(thread=True, exclusive=True, group="memories")
    def _load(self, memory_type: str) -> None:
        """Reads every file in a thread: 10,000 experiences must not hold up the screen."""
        try:
            rows, problems = self._rows(memory_type)
        except (OvtuiError, OSError) as exc:
            self.app.call_from_thread(self.report_error, f"loading {memory_type}", exc)
            return
        cells = [(row.uri, row.cells()) for row in rows]  # built here, off the UI thread
        self.app.call_from_thread(self._fill, memory_type, rows, cells, problems)

    def _rows(self, memory_type: str) -> tuple[list[MemoryRow], list[str]]:
        hotness_problems = self._read_usage()
        if memory_type == EXPERIENCES:
            # Later loads re-read only the files that changed (an apply touches a few of 10,000).
            policy_set = self._loaded = self.workspace.loader.load_sync(self._loaded)
            store = self.workspace.store
            changed = changed_in(store.type_dir(EXPERIENCES), store.type_uri(EXPERIENCES) + "/")
            rows = [self._experience_row(e, changed) for e in policy_set.policies]
            return rows, hotness_problems + [str(p) for p in policy_set.metadata.get("problems", [])]
        store = self.workspace.store
        schema = store.registry.get(memory_type)
        relative = self.workspace.paths.relative_of
        rows, problems = [], hotness_problems
        # The user's own files, then each peer's (seed 004 §3.4), named with the peer.
        for peer in [None, *store.peers()] if schema.peer_enabled else [None]:
            try:
                report = store.load_type(memory_type, peer)
            except OvtuiError as exc:
                if peer is None:
                    raise
                problems.append(str(exc))  # a peer's folder leading outside: the others still show
                continue
            whose = f" · peer {peer}" if peer else ""
            rows += [
                self._row(schema.name_of(m.fields, relative(m.uri or "")) + whose, m) for m in report.files
            ]
            problems += [str(p) for p in report.problems]
        return rows, problems

    def _read_usage(self) -> list[str]:
        """Uses for the hot column; a hotness file ovtui cannot read is a problem listed with the
        others (naming the file), and the memories still show, none of them hot."""
        try:
            self._usage = HotnessLog(self.workspace.paths).usage()
        except OvtuiError as exc:
            self._usage = {}
            return [f"hotness not shown: {exc}"]
        return []

    def _experience_row(self, e: Experience, changed: dict[str, str]) -> MemoryRow:
        when = changed.get(e.uri) or changed_at(str(self.workspace.paths.path_for(e.uri)))
        links = len(e.metadata.get("links") or [])
        return MemoryRow(e.uri, e.name, e.status.value, e.version, when, links, e.content, self._hot(e.uri))

    def _show_preview(self) -> None:
        """The first screenful of experiences, read here on mount so that the first paint shows them
        (a few files: well under the 0.2 s a screen may take; the thread reads the rest after)."""
        table = self.query_one("#memories", VimTable)
        try:
            self._read_usage()  # a problem with it is listed by the full load
            rows = [self._experience_row(e, {}) for e in self.workspace.loader.first(table.screenful)]
        except (OvtuiError, OSError):
            return  # the full load reports it
        self.rows = {row.uri: row for row in rows}  # the row under the cursor shows before the rest
        table.fill([(row.uri, row.cells()) for row in rows])
        self.query_one("#memories-title", Label).update(f"loading {EXPERIENCES}… (first {len(rows)} shown)")

    def _row(self, name: str, memory: MemoryFile) -> MemoryRow:
        uri = memory.uri or ""
        status = memory.fields.get("status")
        return MemoryRow(
            uri,
            name,
            status if isinstance(status, str) else "–",
            memory.version,
            changed_at(str(self.workspace.paths.path_for(uri))),
            len(memory.fields.get("links") or []),
            memory.content,
            self._hot(uri),
        )

    def _hot(self, uri: str) -> float:
        half_life = self.workspace.config.retrieval.hotness_half_life_days
        return hotness_score(self._usage.get(uri), now=time.time(), half_life_days=half_life)

    def _fill(self, memory_type: str, rows: list[MemoryRow], cells: Rows, problems: list[str]) -> None:
        if memory_type != self.memory_type:
            return  # the filter moved on while this type was being read
        table = self.query_one("#memories", VimTable)
        previous, self.rows = self.rows, {row.uri: row for row in rows}
        table.fill(cells)
        title = f"{len(rows)} {memory_type}"
        if problems:
            title += f" · {len(problems)} unreadable file(s): {problems[0]}"
        self.query_one("#memories-title", Label).update(title)
        selected = table.selected_key or (rows[0].uri if rows else None)
        if selected is None or previous.get(selected) != self.rows.get(selected):
            self.shown = ""  # not None: _show(None) must still replace the view of the previous type
        self._show(selected)  # the view is drawn again only when its row changed

    @on(DataTable.RowHighlighted, "#memories")
    def _memory_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            uri = str(event.row_key.value)
            self.follow_cursor(lambda: self._show(uri))

    def _show(self, uri: str | None) -> None:
        if uri == self.shown:
            return
        self.shown = uri
        row = self.rows.get(uri or "")
        view = self.query_one("#memory-markdown", TextMarkdown)
        if row is None:
            view.show(f"*no {self.memory_type} file selected*")
            return
        facts = (
            f"**{row.name}** · {row.status} · version {row.version} · {row.links} link(s) · "
            f"{f'hotness {row.hot:.2f} · ' if row.hot else ''}`{self.relative(row.uri)}`"
        )
        flags = ""
        if self.memory_type == EXPERIENCES:  # what the configured agent would not act on
            unread = unread_notes(self.workspace.experience_reader(), row.content)
            flags = "".join(f"\n\n> ⚠ {note}" for _, note in unread)
        view.show(f"{facts}{flags}\n\n---\n\n{row.content}")

    def action_focus_view(self) -> None:
        self.query_one("#memory-view").focus()

    def action_focus_table(self) -> None:
        self.query_one("#memories", VimTable).focus()
