"""The History screen: memory_diff records newest first, a filter, the diff of a record, revert."""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Footer, Input, Static

from ovtui.app.messages import HistoryChanged, WorkFailed, WorkspaceEdited, answer
from ovtui.app.screens.base import MainScreen
from ovtui.app.screens.confirm import ConfirmModal, when_confirmed
from ovtui.app.services import ScreenServices
from ovtui.app.views.diff_model import DiffSection, record_sections
from ovtui.app.views.history import HistoryFilter, entry_row, record_header
from ovtui.app.widgets.field_diff import FieldDiff
from ovtui.app.widgets.vim_table import Rows, VimTable
from ovtui.core.errors import RevertConflictError
from ovtui.memory.history import HistoryEntry
from ovtui.memory.memory_diff import MemoryDiff

# History's rows arrive in chunks half the default: each chunk makes the table redraw every visible
# cell, and with 150 a j/k pressed meanwhile waited p95 ~59 ms; with 75 it waits p95 ~47 ms (goal
# 50), for a fill of 3.5 s instead of 1.9 s (bench/tui.py --lists-only, 5,000 records).
HISTORY_FILL_CHUNK = 75
FILTER_HELP = "filter: kind:apply|dry_run|revert|session_commit|edit  uri:<name>  or text"


class HistoryScreen(MainScreen):
    KEY = "history"
    AUTO_FOCUS = "#records"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "focus_filter", "Filter", id="history.filter"),
        Binding("ctrl+r", "revert", "Revert", id="history.revert"),
        Binding("u", "toggle_unified", "Unified", id="history.unified"),
        Binding("escape", "focus_records", "Records", id="history.records", show=False),
        Binding("l", "focus_diff", "Diff", id="history.diff", show=False),
        Binding("h", "focus_records", "Records", id="history.records_h", show=False),
    ]

    class Listed(Message, bubble=False):
        """The records the filter keeps, with their rows, read and built by a thread worker."""

        def __init__(self, entries: list[HistoryEntry], rows: Rows) -> None:
            super().__init__()
            self.entries = entries
            self.rows = rows

    class Opened(Message, bubble=False):
        """One record and its diff sections, read and built by a thread worker."""

        def __init__(self, record_id: str, record: MemoryDiff, sections: list[DiffSection]) -> None:
            super().__init__()
            self.record_id = record_id
            self.record = record
            self.sections = sections

    def __init__(self, services: ScreenServices) -> None:
        super().__init__(services)
        self.entries: dict[str, HistoryEntry] = {}
        self.record_id: str | None = None
        self.record: MemoryDiff | None = None
        self._revertable: bool | None = None

    def compose(self) -> ComposeResult:
        yield self.top_bar()
        yield Input(placeholder=FILTER_HELP, id="history-filter", compact=True)
        with Horizontal(id="history-body"):
            yield VimTable(id="records", fill_chunk=HISTORY_FILL_CHUNK)
            with Vertical(id="record-detail"):
                yield Static(id="record-header")
                yield FieldDiff(id="record-diff", placeholder="no record selected")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#records", VimTable)
        table.add_column("record", key="when")
        table.add_columns("kind", "+", "~", "-", "plan")
        self._show_newest()
        # The whole index is read once the first rows are painted: its thread would slow that paint.
        self.call_after_refresh(self.load)

    def _show_newest(self) -> None:
        """The newest screenful of records from the index's last lines, read here on mount so that
        the first paint shows them; the full listing then adds the rest below them."""
        table = self.query_one("#records", VimTable)
        try:
            newest = self.workspace.newest_history(table.screenful)
        except OSError:
            return  # the full listing reports it
        table.fill([(entry.id, entry_row(entry)) for entry in newest])

    # --- listing -------------------------------------------------------------------------------
    def load(self) -> None:
        self._list(HistoryFilter.parse(self.query_one("#history-filter", Input).value))

    @work(thread=True, exclusive=True, group="history-list")
    def _list(self, query: HistoryFilter) -> None:
        try:
            entries = self.workspace.history(kind=query.kind, uri=query.uri, text=query.text)
            rows = [(entry.id, entry_row(entry)) for entry in entries]  # built here, off the UI thread
        except Exception as exc:
            answer(self, WorkFailed("reading the history", exc))
            return
        answer(self, self.Listed(entries, rows))

    @on(Listed)
    def _fill(self, message: Listed) -> None:
        entries, rows = message.entries, message.rows
        table = self.query_one("#records", VimTable)
        new = [e for e in entries if e.id not in self.entries]
        only_added = len(entries) == len(self.entries) + len(new) and table.row_count == len(self.entries)
        if self.entries and only_added:
            # Only records were added (a run applying plans): add those, not 5,000 rows again.
            for entry in new:
                table.add_row(*entry_row(entry), key=entry.id)
            if new:
                table.sort("when", reverse=True)
        else:
            table.fill(rows)
        self.entries = {e.id: e for e in entries}
        if self.record_id is not None and self.record_id not in self.entries:
            self._forget_record()  # a filter hid it: it is neither shown nor revertable

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
    @on(DataTable.RowHighlighted, "#records")
    def _record_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            record_id = str(event.row_key.value)
            if record_id != self.record_id:
                self.follow_cursor(lambda: self._open(record_id))

    @work(thread=True, exclusive=True, group="history-record")
    def _open(self, record_id: str) -> None:
        try:
            record = self.workspace.history_record(record_id)
        except Exception as exc:
            answer(self, WorkFailed(f"reading record {record_id}", exc))
            return
        sections = record_sections(record, self.relative)
        answer(self, self.Opened(record_id, record, sections))

    @on(Opened)
    def _show(self, message: Opened) -> None:
        record_id, record, sections = message.record_id, message.record, message.sections
        self.record_id, self.record = record_id, record
        # layout=False: the header has a fixed height, and a re-layout of this screen is costly
        self.query_one("#record-header", Static).update(record_header(record_id, record), layout=False)
        self.query_one("#record-diff", FieldDiff).show(sections)
        revertable = not record.dry_run
        if revertable != self._revertable:  # the footer recomposes on every refresh: only when needed
            self._revertable = revertable
            self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "revert" and (self.record is None or self.record.dry_run):
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
        if self.record.dry_run:
            self.notify("a dry-run record changed no file: there is nothing to revert", severity="warning")
            return
        record_id, summary = self.record_id, self.record.summary
        body = (
            f"Restore what record {record_id} changed: {summary.total_adds} added file(s) are deleted, "
            f"{summary.total_updates} updated file(s) restored, {summary.total_deletes} deleted file(s) "
            "recreated. The revert gets its own record."
        )
        self.app.push_screen(
            ConfirmModal("Revert this record?", body, confirm="Revert", default="confirm"),
            when_confirmed(lambda: self._revert(record_id, False)),
        )

    @work(exclusive=True, group="revert")
    async def _revert(self, record_id: str, force: bool) -> None:
        try:
            result = await self.workspace.revert(record_id, force=force)
        except RevertConflictError as exc:
            self._offer_force(record_id, exc.conflicts)
            return
        except Exception as exc:
            self.report_error(f"reverting {record_id}", exc)
            return
        forced = " (forced over later changes)" if result.conflicts else ""
        self.notify(
            f"Reverted {record_id}{forced}: {len(result.written_uris)} written, "
            f"{len(result.deleted_uris)} deleted. Record: history/{result.history_id}.",
            title="Reverted",
        )
        self.load()
        self.post_message(WorkspaceEdited(history=True, experiences=True))

    def _offer_force(self, record_id: str, conflicts: list[str]) -> None:
        files = ", ".join(self.relative(uri) for uri in conflicts) or "some files"
        body = (
            f"{len(conflicts) or 'Some'} file(s) changed after record {record_id}: {files}.\n\n"
            "Force revert overwrites those later changes with the state before the record "
            "(the revert gets its own record)."
        )
        modal = ConfirmModal("Revert conflict", body, confirm="Force revert", danger=True)
        self.app.push_screen(modal, when_confirmed(lambda: self._revert(record_id, True)))
