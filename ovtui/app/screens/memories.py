"""The Memories screen: every declared memory type, one at a time (experiences first), and one file.

The type filter (a Select, or ``t`` to step through the types) chooses what the table lists: name,
status and version of each file, its record in the use ledger (uses, sessions, success share, last
use), its hotness, last change and links; the view on the right shows that record (the outcome
histogram, the current version's uses, the newest trajectories it fed) above the file as Markdown.
Experiences come from the workspace's policy snapshot; other types are read from disk.
The list is read by a thread worker, which posts the rows it built (``MemoriesScreen.Loaded``).
"""

from __future__ import annotations

import asyncio
import re
import time
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Label, Select

from ovtui.app.messages import ExperiencesChanged, MemoriesChanged, WorkFailed, WorkspaceEdited, answer
from ovtui.app.screens.base import MainScreen, back_bindings
from ovtui.app.services import ScreenServices
from ovtui.app.views.adherence import ADHERENCE_COLUMN, adherence_cell, adherence_panel
from ovtui.app.views.memories import (
    USAGE_COLUMNS,
    UTILITY_COLUMN,
    empty_state,
    usage_cells,
    usage_panel,
    utility_cell,
    utility_panel,
)
from ovtui.app.widgets.footer import KeyFooter
from ovtui.app.widgets.text_markdown import TextMarkdown
from ovtui.app.widgets.vim_table import Rows, VimTable, widest_cells
from ovtui.core.domain import Experience, ExperienceSet
from ovtui.core.errors import OvtuiError
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.hotness import hotness_score
from ovtui.memory.ledger_state import Fed, Usage
from ovtui.memory.types import EXPERIENCES

if TYPE_CHECKING:
    from ovtui.train.adherence.summary import Adherence
    from ovtui.train.utility import ExperienceUtility


@dataclass(frozen=True)
class MemoryRow:
    uri: str
    name: str
    status: str
    version: int
    changed: str
    links: int
    content: str
    hot: float = 0.0  # hotness: how often and how lately the agent used it; 0 when never used
    usage: Usage | None = None  # its record in the use ledger (None: never used)
    utility: ExperienceUtility | None = None  # its newest ablation (None: never measured)
    adherence: Adherence | None = None  # whether its directives were followed (None: not recorded)
    reading: bool = False  # only its file's name and time known yet: the file is still to be read

    @cached_property
    def cells(self) -> tuple[str, ...]:
        # Plain strings (the table makes Text only of the rows on screen): a Text per cell, 120,000
        # for 10,000 rows, was most of the time of building the rows.
        # What a file is and when it changed first, then its uses: a narrow pane cuts the right end
        # (Right shows the next column whole).
        return (
            self.name,
            READING if self.reading else self.status,
            READING if self.reading else str(self.version),
            self.changed,
            *usage_cells(self.usage),
            utility_cell(self.utility, self.version),
            f"{self.hot:.2f}" if self.hot else "–",
            READING if self.reading else str(self.links),
            adherence_cell(self.adherence),
        )


_CREATED = re.compile(r"_(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})\d{2}$")


def with_creation_time(name: str, uri: str) -> str:
    """``name`` with the time its file name carries (a trajectory, an event): many files share a
    name, one per run or day, and the time is what tells them apart in the list."""
    stem = uri.rsplit("/", 1)[-1].removesuffix(".md")
    found = _CREATED.search(stem)
    if found is None or name.endswith(found.group(0)):
        return name
    year, month, day, hour, minute_ = found.groups()
    return f"{name} {year}-{month}-{day} {hour}:{minute_}"


def minute(mtime: float | None) -> str:
    """A file's last change as the table shows it ("?" when it could not be read)."""
    return _minute_text(int(mtime // 60)) if mtime is not None else "?"


@lru_cache(maxsize=4096)
def _minute_text(minutes: int) -> str:
    # Once per minute, not per file: files written together share one (formatting 10,000 times
    # was a tenth of building the rows).
    return datetime.fromtimestamp(minutes * 60, UTC).strftime("%Y-%m-%d %H:%M")


LIST_WIDTH = 48
DETAIL_WIDTH = 56
READER_QUIET_S = 0.5
READING = "…"  # a cell of a file not read yet
# A folder with at least this many files no ovtui process has read lists their names first: reading
# 10,000 takes a second, their names a tenth of one.
NAMES_FIRST_AT = 2_000
FILTER_HELP = "/ filter: the words a memory's name or text holds (esc: back to the list)"


def matches(row: MemoryRow, words: list[str]) -> bool:
    """Every word of the filter in the row's name or text (case does not matter)."""
    text = f"{row.name}\n{row.content}".casefold()
    return all(word in text for word in words)


class MemoriesScreen(MainScreen):
    KEY = "memories"
    AUTO_FOCUS = "#memories"
    WORK_LOST: ClassVar[dict[str, str]] = {"memories-edit": "an edit of a memory file is still being saved"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+l", "reload", "Reload", id="memories.reload"),
        Binding("t", "next_type", "Type", id="memories.next_type"),
        Binding("slash", "focus_filter", "Filter", id="memories.filter"),
        Binding("e", "edit", "Edit", id="memories.edit"),
        Binding("l", "focus_view", "Read", id="memories.read", show=False),
        Binding("h", "focus_table", "List", id="memories.list", show=False),
        *back_bindings("memories", main_screen=True),
    ]

    class Loaded(Message, bubble=False):
        """The rows of one memory type, read and built by the screen's thread worker."""

        def __init__(
            self,
            memory_type: str,
            rows: list[MemoryRow],
            cells: Rows,
            widths: list[int],
            problems: list[str],
            *,
            reading: bool = False,
        ) -> None:
            super().__init__()
            self.memory_type = memory_type
            self.reading = reading  # names first: the files are still being read
            self.rows = rows
            self.cells = cells
            self.widths = widths  # the widest cell of each column
            self.problems = problems
            self.by_uri = {row.uri: row for row in rows}

    class ReaderBuilt(Message, bubble=False):
        """The agent's reader is built: the view can say what in a file it would not act on."""

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self._reader_timer: Timer | None = None  # counting down to the reader's build
        # Set once the view shows the reader's notes; until then it shows a file without them.
        self.reader_ready = asyncio.Event()
        self.rows: dict[str, MemoryRow] = {}
        self.shown: str | None = None
        self.memory_type = EXPERIENCES
        # The last full load of the experiences: a reload re-reads only the files that changed since.
        self._loaded: ExperienceSet | None = None
        self._usage: dict[str, Usage] = {}  # the use ledger's records by URI, read once per load
        self._utility: dict[str, ExperienceUtility] = {}  # `ovtui utility`'s results by name, likewise
        self._adherence: dict[str, Adherence] = {}  # `ovtui adherence`'s by URI, likewise
        # The rows of the last load of the experiences by URI, with the experience each was built from.
        self._built: dict[str, tuple[Experience, MemoryRow]] = {}
        self._all: MemoriesScreen.Loaded | None = None  # the type's rows before the filter

    def compose(self) -> ComposeResult:
        yield self.top_bar()
        with Horizontal(id="memories-head"):
            types = self.workspace.reading.memory_types()
            yield Select(
                [(t, t) for t in types], value=EXPERIENCES, allow_blank=False, id="memory-type", compact=True
            )
            yield Label("loading experiences…", id="memories-title", classes="pane-title")
        yield Input(placeholder=FILTER_HELP, id="memories-filter", compact=True)
        with Horizontal(id="memories-body"):
            yield VimTable(id="memories")
            with VerticalScroll(id="memory-view"):
                yield TextMarkdown(id="memory-markdown")
        yield KeyFooter()

    def on_resize(self, event: events.Resize) -> None:
        # The list may take 60% of the screen (at 220 columns every column shows) but no more than
        # leaves the view DETAIL_WIDTH columns (its header and file path whole), unless that would
        # squeeze the list below LIST_WIDTH (names whole at 80 columns).
        width = event.size.width
        keeps_view = width - DETAIL_WIDTH
        table = self.query_one("#memories", VimTable)
        table.styles.max_width = keeps_view if LIST_WIDTH <= keeps_view < width * 3 // 5 else "60%"

    def on_mount(self) -> None:
        table = self.query_one("#memories", VimTable)
        table.add_columns(
            *("name", "status", "version", "changed (UTC)", *USAGE_COLUMNS, UTILITY_COLUMN, "hot", "links"),
            ADHERENCE_COLUMN,
        )
        self._show_preview()
        # The whole list is read once the first rows are painted: its thread would slow that paint.
        self.call_after_refresh(self.action_reload)

    def action_reload(self) -> None:
        self._load(self.memory_type)

    def action_next_type(self) -> None:
        types = self.workspace.reading.memory_types()
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
            usage_problems = self._read_usage()  # once per load: the names first use it too
            if memory_type == EXPERIENCES and self._loaded is None:
                self._names_first()
            rows, problems = self._rows(memory_type, usage_problems)
        except (OvtuiError, OSError) as exc:
            answer(self, WorkFailed(f"loading {memory_type}", exc))
            return
        self._post_rows(memory_type, rows, problems)

    def _post_rows(
        self, memory_type: str, rows: list[MemoryRow], problems: list[str], *, reading: bool = False
    ) -> None:
        cells = [(row.uri, row.cells) for row in rows]  # built and measured here, off the UI thread
        widths = widest_cells([c for _, c in cells], len(cells[0][1]) if cells else 0)
        answer(self, self.Loaded(memory_type, rows, cells, widths, problems, reading=reading))

    def _names_first(self) -> None:
        """A big folder no ovtui process has read yet (copied in): every file's name and time in the
        list at once, each row filled in when every file is read (the rows of the first screenful,
        already read, as they are)."""
        files = self.workspace.reading.unparsed_experiences(NAMES_FIRST_AT)
        if files is None:
            return
        preview = self.rows
        rows = [preview.get(uri) or self._reading_row(uri, when) for uri, when in files.items()]
        self._post_rows(EXPERIENCES, rows, [], reading=True)

    def _reading_row(self, uri: str, when: float) -> MemoryRow:
        name = uri.rsplit("/", 1)[-1].removesuffix(".md")  # the experience's name, but for its case
        usage = self._usage.get(uri)
        return MemoryRow(
            uri,
            name,
            "",
            0,
            minute(when),
            0,
            "",
            self._hot(usage),
            usage,
            reading=True,  # its utility, by its version, once it is read
        )

    def _build_reader_when_quiet(self) -> None:
        """The agent's reader, which the view asks what a file says that it would not act on, is
        built once the list has been still for READER_QUIET_S: its imports take a fifth of a
        second of the interpreter, which on the UI thread held up the keys, before the rows held
        up the list, and right after them slowed the keys pressed in the new list."""
        if self._reader_timer is not None:
            self._reader_timer.reset()
        else:
            self._reader_timer = self.set_timer(READER_QUIET_S, self._reader_quiet)

    def _reader_quiet(self) -> None:
        self._reader_timer = None
        self._build_reader()

    @work(thread=True, exclusive=True, group="memories-reader")
    def _build_reader(self) -> None:
        with suppress(OvtuiError):  # a reader that cannot be built is the view's to report
            self.workspace.review.unread_lines("")
        answer(self, self.ReaderBuilt())

    def _rows(self, memory_type: str, usage_problems: list[str]) -> tuple[list[MemoryRow], list[str]]:
        if memory_type == EXPERIENCES:
            # Later loads re-read only the files that changed (an apply touches a few of 10,000),
            # and rebuild only their rows.
            policy_set = self._loaded = self.workspace.reading.experiences(self._loaded)
            changed = {
                uri: minute(t) for uri, t in self.workspace.reading.experience_times(policy_set).items()
            }
            rows = [self._experience_row(e, changed) for e in policy_set.policies]
            self._built = {row.uri: (e, row) for e, row in zip(policy_set.policies, rows, strict=True)}
            return rows, usage_problems + [str(p) for p in policy_set.metadata.get("problems", [])]
        # The user's own files, then each peer's, named with the peer.
        listing = self.workspace.reading.memories(memory_type)
        changed = {uri: minute(t) for uri, t in self.workspace.reading.modified_times(memory_type).items()}
        rows = [self._row(name, memory, changed) for name, memory in listing.files]
        return rows, usage_problems + listing.problems

    def _read_usage(self) -> list[str]:
        """The use ledger's records for the usage columns; a ledger ovtui cannot read is a problem
        listed with the others (naming the file), and the memories still show, none of them used."""
        try:
            self._utility = self.workspace.measures.utility_results().experiences
        except OvtuiError as exc:
            self._utility = {}
            problems = [f"utility not shown: {exc}"]
        else:
            problems = []
        try:
            self._adherence = {a.uri: a for a in self.workspace.reading.adherence()}
        except OvtuiError as exc:
            self._adherence = {}
            problems.append(f"adherence not shown: {exc}")
        try:
            self._usage = self.workspace.reading.memory_uses()
        except OvtuiError as exc:
            self._usage = {}
            return [f"uses not shown: {exc}", *problems]
        return problems

    def _experience_row(self, e: Experience, changed: dict[str, str]) -> MemoryRow:
        when = changed.get(e.uri) or minute(self.workspace.reading.modified_time(e.uri))
        usage, utility = self._usage.get(e.uri), self._utility.get(e.name)
        adherence = self._adherence.get(e.uri)
        built = self._built.get(e.uri)
        if built is not None and built[0] is e:  # the same snapshot's experience: the same file
            row = built[1]
            # A used memory's hotness decays with time: its row is built again.
            same = usage is None and row.usage is None and row.changed == when and row.utility == utility
            if same and row.adherence == adherence:
                return row
        links = len(e.metadata.get("links") or [])
        hot = self._hot(usage)
        return MemoryRow(
            e.uri, e.name, e.status.value, e.version, when, links, e.content, hot, usage, utility, adherence
        )

    def _show_preview(self) -> None:
        """The first screenful of experiences, read here on mount so that the first paint shows them
        (a few files: well under the 0.2 s a screen may take; the thread reads the rest after)."""
        table = self.query_one("#memories", VimTable)
        try:
            self._read_usage()  # a problem with it is listed by the full load
            rows = [
                self._experience_row(e, {}) for e in self.workspace.reading.first_experiences(table.screenful)
            ]
        except (OvtuiError, OSError):
            return  # the full load reports it
        self.rows = {row.uri: row for row in rows}  # the row under the cursor shows before the rest
        table.fill([(row.uri, row.cells) for row in rows])
        self.query_one("#memories-title", Label).update(f"loading {EXPERIENCES}… (first {len(rows)} shown)")

    def _row(self, name: str, memory: MemoryFile, changed: dict[str, str]) -> MemoryRow:
        uri = memory.uri or ""
        # A trajectory has no status: its outcome tells one run of a task from another.
        status = memory.fields.get("status") or memory.fields.get("outcome")
        usage = self._usage.get(uri)
        return MemoryRow(
            uri,
            with_creation_time(name, uri),
            status if isinstance(status, str) else "–",
            memory.version,
            changed.get(uri) or minute(self.workspace.reading.modified_time(uri)),
            len(memory.fields.get("links") or []),
            memory.content,
            self._hot(usage),
            usage,
        )

    def _hot(self, usage: Usage | None) -> float:
        """A memory's hotness now, from its record in the use ledger (0: never used)."""
        if usage is None:
            return 0.0
        half_life = self.workspace.config.retrieval.hotness_half_life_days
        return hotness_score(usage, now=time.time(), half_life_days=half_life)

    @on(Loaded)
    def _fill(self, message: Loaded) -> None:
        if message.memory_type != self.memory_type:
            return  # the filter moved on while this type was being read
        self._all = message
        self._show_rows()
        if message.memory_type == EXPERIENCES and not message.reading and not self.reader_ready.is_set():
            self._build_reader_when_quiet()

    def _show_rows(self) -> None:
        """The loaded rows the filter keeps, in the table; the title says how many of how many."""
        message = self._all
        if message is None:
            return
        memory_type, problems = message.memory_type, message.problems
        words = self.query_one("#memories-filter", Input).value.casefold().split()
        table = self.query_one("#memories", VimTable)
        previous = self.rows
        if words:
            kept = [
                (row, cells)
                for row, cells in zip(message.rows, message.cells, strict=True)
                if matches(row, words)
            ]
            rows = [row for row, _ in kept]
            self.rows = {row.uri: row for row in rows}
            table.fill([cells for _, cells in kept])
        else:  # every row, as the worker built, keyed and measured them
            rows, self.rows = message.rows, message.by_uri
            table.fill(message.cells, widths=message.widths)
        # The type is a folder's name (cases, soul): "1 cases" and "0 soul" read wrong, files count.
        files = "file" if len(message.rows) == 1 else "files"
        shown = f"{len(rows)} of {len(message.rows)}" if words else str(len(rows))
        title = f"{memory_type}: {shown} {files}"
        if message.reading:
            title += " · reading each file…"
        if problems:  # the file first: a narrow terminal cuts the end of the line, not the name
            title += f" · {len(problems)} unreadable: {problems[0]}"
        self.query_one("#memories-title", Label).update(Text(title))
        selected = table.selected_key or (rows[0].uri if rows else None)
        if selected is None or previous.get(selected) != self.rows.get(selected):
            self.shown = ""  # not None: _show(None) must still replace the view of the previous type
        self._show(selected)  # the view is drawn again only when its row changed

    @on(ReaderBuilt)
    def _reader_ready(self) -> None:
        self.reader_ready.set()
        selected, self.shown = self.shown, ""
        self._show(selected)  # now with its notes

    @on(VimTable.RowHighlighted, "#memories")
    def _memory_highlighted(self, event: VimTable.RowHighlighted) -> None:
        uri = event.key
        self.follow_cursor(lambda: self._show(uri))
        if self._reader_timer is not None:  # still moving: the reader waits for a pause
            self._build_reader_when_quiet()

    def _show(self, uri: str | None) -> None:
        if uri == self.shown:
            return
        self.shown = uri
        row = self.rows.get(uri or "")
        view = self.query_one("#memory-markdown", TextMarkdown)
        if row is None:
            filtered = self._all is not None and bool(self._all.rows)
            view.show(
                f"*no {self.memory_type} file matches the filter*"
                if filtered
                else empty_state(self.memory_type)
            )
            return
        if row.reading:
            view.show(
                f"**{row.name}** · `{self.relative(row.uri)}`\n\n"
                f"*reading the {self.memory_type}: this file shows once every file is read*"
            )
            return
        facts = (
            f"**{row.name}** · {row.status} · version {row.version} · {row.links} link(s) · "
            f"{f'hotness {row.hot:.2f} · ' if row.hot else ''}`{self.relative(row.uri)}`"
        )
        flags = ""
        if self.memory_type == EXPERIENCES and self.reader_ready.is_set():  # what the agent won't act on
            flags = "".join(f"\n\n> ⚠ {note}" for note in self.workspace.review.unread_lines(row.content))
        used = usage_panel(row.usage, row.hot, self._fed(row), row.version, self.relative)
        if self.memory_type == EXPERIENCES:
            used += "\n\n" + utility_panel(row.utility, row.version)
            used += "\n\n" + adherence_panel(row.adherence, self.relative)
        view.show(f"{facts}{flags}\n\n{used}\n\n---\n\n{row.content}")

    def _fed(self, row: MemoryRow) -> list[Fed]:
        """The newest results the memory fed (read from the ledger, which folds only what was
        appended since its last read); none when it was never used or cannot be read."""
        if row.usage is None:
            return []
        try:
            return self.workspace.reading.memory_fed(row.uri)
        except OvtuiError:
            return []  # the load listed the problem

    @on(Input.Changed, "#memories-filter")
    def _filter_changed(self) -> None:
        self._show_rows()

    @on(Input.Submitted, "#memories-filter")
    def _filter_submitted(self) -> None:
        self.action_focus_table()

    def action_focus_filter(self) -> None:
        self.query_one("#memories-filter", Input).focus()

    def action_edit(self) -> None:
        """The body of the file under the cursor in $EDITOR; saved like an apply, recorded in History."""
        row = self.rows.get(self.query_one("#memories", VimTable).selected_key or "")
        if row is None:
            self.notify("no memory file selected to edit", severity="warning")
            return
        if row.reading:
            self.notify(
                f"the {self.memory_type} are still being read: edit once the list is in", severity="warning"
            )
            return
        try:
            edited = self.services.editor(row.content)
        except Exception as exc:
            self.report_error("running the editor", exc)
            return
        if edited is None or edited.strip() == row.content.strip():
            self.notify("content unchanged: nothing was written")
            return
        self._save_edit(self.memory_type, row, edited)

    @work(exclusive=True, group="memories-edit")
    async def _save_edit(self, memory_type: str, row: MemoryRow, content: str) -> None:
        try:
            result = await self.workspace.review.edit_memory(memory_type, row.uri, content)
        except (OvtuiError, OSError) as exc:
            self.report_error(f"saving {self.relative(row.uri)}", exc)
            return
        if result.errors or result.item_errors:
            reasons = [*result.errors, *(e.message for e in result.item_errors)]
            self.report_error(f"saving {self.relative(row.uri)}", OvtuiError("; ".join(reasons)))
            return
        self.notify(f"edited {row.name}: recorded in History as {result.history_id}", markup=False)
        self.post_message(WorkspaceEdited(history=True, experiences=True))

    def action_focus_view(self) -> None:
        self.query_one("#memory-view").focus()

    def action_focus_table(self) -> None:
        self.query_one("#memories", VimTable).focus()
