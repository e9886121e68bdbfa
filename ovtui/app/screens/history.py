"""The History screen: memory_diff records newest first, a filter, the diff of a record, revert and
undoing a revert.

A record a revert undid is marked, and reverting it again is refused before anything is asked; a
revert that meets files changed after the record names the later records that changed them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Input, Static

from ovtui.app.messages import HistoryChanged, WorkFailed, WorkspaceEdited, answer
from ovtui.app.screens.base import MainScreen, back_bindings
from ovtui.app.screens.confirm import ConfirmModal, when_confirmed
from ovtui.app.screens.help import HintFooter
from ovtui.app.services import ScreenServices
from ovtui.app.views.diff_model import DiffSection, record_sections
from ovtui.app.views.history import (
    RECORD_COLUMNS,
    HistoryFilter,
    entry_row,
    record_header,
    reverted_records,
    reverted_words,
    when,
)
from ovtui.app.widgets.field_diff import FieldDiff
from ovtui.app.widgets.vim_table import Rows, VimTable
from ovtui.core.errors import RevertConflictError
from ovtui.memory.history import HistoryEntry
from ovtui.memory.memory_diff import MemoryDiff

# History's rows arrive in chunks half the default: each chunk makes the table redraw every visible
# cell, and with 150 a j/k pressed meanwhile waited p95 ~59 ms; with 75 it waits p95 ~47 ms (goal
# 50), for a fill of 3.5 s instead of 1.9 s (bench/tui.py --lists-only, 5,000 records).
FILTER_HELP = "kind:apply|dry_run|revert|session_commit|migrate|edit|write uri:<name> text"
NO_HISTORY = (
    "no history yet: every apply writes a record here (Review, key 2, or `ovtui train --approve all`), "
    "and so does every revert"
)
# Later records a conflict dialog names one by one (newest first); the rest are counted.
LATER_SHOWN = 5


class HistoryScreen(MainScreen):
    KEY = "history"
    AUTO_FOCUS = "#records"
    WORK_LOST: ClassVar[dict[str, str]] = {"revert": "a revert is being written"}
    DEFAULT_CSS = """
    /* The focused pane has a bar at its left edge: a shape, not only a colour. */
    HistoryScreen #records:focus { outline-left: outer $accent; }
    HistoryScreen #record-diff { border-left: blank; }
    HistoryScreen #record-diff:focus { border-left: outer $accent; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "Filter", id="history.filter"),
        Binding("ctrl+r", "revert", "Revert", id="history.revert"),
        Binding(
            "z",
            "undo_revert",
            "Undo revert",
            id="history.undo_revert",
            tooltip="revert the revert that undid this record (or the last revert)",
        ),
        Binding("u", "toggle_unified", "Unified", id="history.unified"),
        *back_bindings("history", main_screen=True),
        Binding("l", "focus_diff", "Diff", id="history.diff", show=False),
        Binding("h", "focus_records", "Records", id="history.records_h", show=False),
    ]

    class Listed(Message, bubble=False):
        """The records the filter keeps, with their rows, read and built by a thread worker."""

        def __init__(self, entries: list[HistoryEntry], rows: Rows, reverted: dict[str, str]) -> None:
            super().__init__()
            self.entries = entries
            self.rows = rows
            self.reverted = reverted

    class Opened(Message, bubble=False):
        """One record and its diff sections, read and built by a thread worker."""

        def __init__(
            self,
            record_id: str,
            record: MemoryDiff,
            sections: list[DiffSection],
            reverted: HistoryEntry | None,
        ) -> None:
            super().__init__()
            self.record_id = record_id
            self.record = record
            self.sections = sections
            self.reverted = reverted  # the record a revert undid

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self.entries: dict[str, HistoryEntry] = {}
        self.reverted: dict[str, str] = {}  # record id → the revert that undoes it
        self.record_id: str | None = None
        self.record: MemoryDiff | None = None
        self._revertable: bool | None = None

    def compose(self) -> ComposeResult:
        yield self.top_bar()
        yield Input(placeholder=FILTER_HELP, id="history-filter", compact=True)
        with Horizontal(id="history-body"):
            yield VimTable(id="records")
            with Vertical(id="record-detail"):
                yield Static(id="record-header")
                yield FieldDiff(id="record-diff", placeholder=NO_HISTORY)
        yield HintFooter()

    def on_mount(self) -> None:
        table = self.query_one("#records", VimTable)
        table.add_column("record", key="when")
        *whole, summary = RECORD_COLUMNS
        table.add_columns(*whole)
        # A narrow screen cuts what a record was about, never its kind or counts.
        table.add_column(summary, gives_way=True)
        self._show_newest()
        # The whole index is read once the first rows are painted: its thread would slow that paint.
        self.call_after_refresh(self.load)

    def _show_newest(self) -> None:
        """The newest screenful of records from the index's last lines, read here on mount so that
        the first paint shows them; the full listing then adds the rest below them (and the marks
        of reverted records, which need every revert)."""
        table = self.query_one("#records", VimTable)
        try:
            newest = self.workspace.reading.newest_history(table.screenful)
        except OSError:
            return  # the full listing reports it
        table.fill([(entry.id, entry_row(entry)) for entry in newest])

    # --- listing -------------------------------------------------------------------------------
    def load(self) -> None:
        self._list(HistoryFilter.parse(self.query_one("#history-filter", Input).value))

    @work(thread=True, exclusive=True, group="history-list")
    def _list(self, query: HistoryFilter) -> None:
        try:
            entries = self.workspace.reading.history(kind=query.kind, uri=query.uri, text=query.text)
            reverted = reverted_records(self.workspace.reading.history(kind="revert"))
            rows = [(e.id, entry_row(e, reverted.get(e.id))) for e in entries]  # built off the UI thread
        except Exception as exc:
            answer(self, WorkFailed("reading the history", exc))
            return
        answer(self, self.Listed(entries, rows, reverted))

    @on(Listed)
    def _fill(self, message: Listed) -> None:
        entries, rows = message.entries, message.rows
        table = self.query_one("#records", VimTable)
        new = [e for e in entries if e.id not in self.entries]
        only_added = len(entries) == len(self.entries) + len(new) and table.row_count == len(self.entries)
        marks_changed = message.reverted != self.reverted
        if self.entries and only_added and not marks_changed:
            # Only records were added (a run applying plans): add those, not 5,000 rows again.
            for entry in new:
                table.add_row(*entry_row(entry, message.reverted.get(entry.id)), key=entry.id)
            if new:
                table.sort("when", reverse=True)
        else:
            table.fill(rows)
        # Both keep the cursor on its row, wherever the rows moved: on the row the keys moved it to,
        # not back on the record shown (a key pressed while the list was read looked ignored).
        self.entries = {e.id: e for e in entries}
        self.reverted = message.reverted
        if self.record_id is not None and self.record_id not in self.entries:
            self._forget_record()  # a filter hid it: it is neither shown nor revertable
        elif self.record_id is not None and marks_changed:
            self._open(self.record_id)  # its header says whether it is reverted
        self._say_when_empty(table)

    def _say_when_empty(self, table: VimTable) -> None:
        query = self.query_one("#history-filter", Input).value.strip()
        diff = self.query_one("#record-diff", FieldDiff)
        if table.row_count:
            diff.placeholder = "no record selected"
        elif query:
            diff.placeholder = f"no record matches the filter {query!r}: / edits it"
        else:
            diff.placeholder = NO_HISTORY
        if not table.row_count:
            diff.refresh()

    def _forget_record(self) -> None:
        self.record_id, self.record = None, None
        self.query_one("#record-header", Static).update("", layout=False)
        self.query_one("#record-diff", FieldDiff).show([])
        self._revertable = None
        self.refresh_bindings()

    @on(Input.Changed, "#history-filter")
    def _filter_changed(self) -> None:
        self.entries = {}  # another filter: the rows are replaced, not added to
        self.load()

    @on(Input.Submitted, "#history-filter")
    def _filter_submitted(self) -> None:
        self.query_one("#records", VimTable).focus()

    def on_history_changed(self, _: HistoryChanged) -> None:
        self.reload_soon(self.load)

    def on_stale_view(self) -> None:
        self.load()

    # --- one record ----------------------------------------------------------------------------
    @on(VimTable.RowHighlighted, "#records")
    def _record_highlighted(self, event: VimTable.RowHighlighted) -> None:
        record_id = event.key
        if record_id != self.record_id:
            self.follow_cursor(lambda: self._open(record_id))

    @work(thread=True, exclusive=True, group="history-record")
    def _open(self, record_id: str) -> None:
        try:
            record = self.workspace.reading.history_record(record_id)
            reverted = None
            if record.reverts:  # a revert's header names what it undid
                undid = self.workspace.reading.history_record(record.reverts)
                reverted = HistoryEntry.from_record(record.reverts, undid)
        except Exception as exc:
            answer(self, WorkFailed(f"reading record {record_id}", exc))
            return
        sections = record_sections(record, self.relative)
        answer(self, self.Opened(record_id, record, sections, reverted))

    @on(Opened)
    def _show(self, message: Opened) -> None:
        record_id, record, sections = message.record_id, message.record, message.sections
        if record_id not in (self.query_one("#records", VimTable).selected_key, self.record_id):
            return  # the cursor moved on while it was read (a refill passed over it): not this one
        # (the record already shown, read again after a refill, is shown: its marks may have changed
        # while the refilled table has not yet put its cursor back on it)
        self.record_id, self.record = record_id, record
        header = record_header(record_id, record, self.reverted.get(record_id), message.reverted)
        # layout=False: the header has a fixed height, and a re-layout of this screen is costly
        self.query_one("#record-header", Static).update(header, layout=False)
        self.query_one("#record-diff", FieldDiff).show(sections)
        revertable = not record.dry_run
        if revertable != self._revertable:  # the footer recomposes on every refresh: only when needed
            self._revertable = revertable
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "revert" and (self.record is None or self.record.dry_run):
            return None
        if action == "undo_revert" and not self.reverted:
            return None
        return True

    def action_focus_filter(self) -> None:
        self.query_one("#history-filter", Input).focus()

    def action_focus_records(self) -> None:
        self.query_one("#records", VimTable).focus()

    def action_focus_diff(self) -> None:
        self.query_one("#record-diff", FieldDiff).focus()

    def action_toggle_unified(self) -> None:
        diff = self.query_one("#record-diff", FieldDiff)
        diff.unified = not diff.unified

    # --- revert --------------------------------------------------------------------------------
    def action_revert(self) -> None:
        if self.record is None or self.record_id is None:
            return
        record_id, record = self.record_id, self.record
        if record.dry_run:
            self.notify("a dry-run record changed no file: there is nothing to revert", severity="warning")
            return
        undone_by = self.reverted.get(record_id)
        if undone_by is not None:  # the kernel refuses it too: say so before asking anything
            self.notify(
                f"record {record_id} is already reverted by history/{undone_by} ({when(undone_by)}): "
                "z undoes that revert",
                title="Already reverted",
                severity="warning",
                markup=False,
            )
            return
        summary = record.summary
        what = f"undo the revert {record_id}: " if record.reverts else ""
        body = (
            f"Restore what record {record_id} changed ({what}{summary.total_adds} added file(s) are "
            f"deleted, {summary.total_updates} updated file(s) restored, {summary.total_deletes} deleted "
            "file(s) recreated). The revert gets its own record; z undoes it."
        )
        self.app.push_screen(
            ConfirmModal("Revert this record?", body, confirm="Revert", default="confirm"),
            when_confirmed(lambda: self._revert(record_id, False)),
        )

    def action_undo_revert(self) -> None:
        """Revert the revert that undid the selected record; on a revert in effect, that revert; else
        the newest revert still in effect."""
        in_effect = set(self.reverted.values())
        chosen = self.reverted.get(self.record_id or "")
        if chosen is None and self.record_id in in_effect:
            chosen = self.record_id
        if chosen is None and in_effect:
            chosen = max(in_effect)  # ids start with their time: the newest
        if chosen is None:
            self.notify("no revert to undo", severity="warning")
            return
        undone = next(record for record, revert in self.reverted.items() if revert == chosen)
        body = (
            f"Undo the revert history/{chosen} ({when(chosen)}): what record {undone} changed is "
            "restored. The undo is a revert of the revert, with its own record."
        )
        revert_id = chosen
        self.app.push_screen(
            ConfirmModal("Undo this revert?", body, confirm="Undo revert", default="confirm"),
            when_confirmed(lambda: self._revert(revert_id, False)),
        )

    @work(exclusive=True, group="revert")
    async def _revert(self, record_id: str, force: bool) -> None:
        try:
            result = await self.workspace.review.revert(record_id, force=force)
        except RevertConflictError as exc:
            try:
                later = await asyncio.to_thread(self.workspace.reading.history)
            except Exception:
                later = []  # the dialog then names the files only
            self._offer_force(record_id, exc.conflicts, later)
            return
        except Exception as exc:
            self.report_error(f"reverting {record_id}", exc)
            return
        forced = " (forced over later changes)" if result.conflicts else ""
        self.notify(
            f"Reverted {record_id}{forced}: {len(result.written_uris)} written, "
            f"{len(result.deleted_uris)} deleted. Record: history/{result.history_id} (z undoes it).",
            title="Reverted",
        )
        self.load()
        self.post_message(WorkspaceEdited(history=True, experiences=True))

    def _offer_force(self, record_id: str, conflicts: list[str], entries: list[HistoryEntry]) -> None:
        files = ", ".join(self.relative(uri) for uri in conflicts) or "some files"
        later = later_records(record_id, conflicts, entries, self.relative, self.reverted)
        if later:
            named = [reverted_words(e.id, e) for e in later[:LATER_SHOWN]]
            if len(later) > LATER_SHOWN:
                named.append(f"… and {len(later) - LATER_SHOWN} more")
            order = "\n".join(f"  {line}" for line in named)
            why = f"Later records changed them; revert these first, newest first:\n{order}"
        else:
            why = "No later record changed them: they were edited outside ovtui."
        body = (
            f"{len(conflicts) or 'Some'} file(s) changed after record {record_id}: {files}.\n\n{why}\n\n"
            "Force revert overwrites those later changes with the state before the record "
            "(the revert gets its own record)."
        )
        modal = ConfirmModal("Revert conflict", body, confirm="Force revert", danger=True)
        self.app.push_screen(modal, when_confirmed(lambda: self._revert(record_id, True)))


def later_records(
    record_id: str,
    conflicts: list[str],
    entries: list[HistoryEntry],
    relative: Callable[[str], str],
    reverted: dict[str, str],
) -> list[HistoryEntry]:
    """The records after ``record_id`` that changed a conflicting file and are still in effect,
    newest first (the order to revert them in)."""
    wanted = set(conflicts)
    return [
        entry
        for entry in sorted(entries, key=lambda e: e.id, reverse=True)
        if entry.id > record_id
        and not entry.dry_run
        and entry.id not in reverted
        and any(relative(uri) in wanted or uri in wanted for uri in entry.uris)
    ]
