"""A DataTable with vim keys (j/k/g/G), each binding with an id so ``[keys]`` can remap it."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from contextlib import suppress
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

Rows = Sequence[tuple[str, Sequence[object]]]

# Rows added per repaint after the first screenful: each chunk's cells are measured on the next
# refresh, and a row added clears the cell cache, so every visible cell is drawn again too. On 10,000
# rows and 2 busy cores: 200 a chunk kept j/k at p95 ~90 ms, 100 doubled the fill time (6 s).
FILL_CHUNK = 150
# The first fill of a table of at least this many rows freezes what is alive (see ``fill``).
BIG_LIST_ROWS = 1_000


class VimTable(DataTable[object]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", id="list.down", show=False),
        Binding("k", "cursor_up", "Up", id="list.up", show=False),
        Binding("g", "scroll_top", "Top", id="list.top", show=False),
        Binding("G", "scroll_bottom", "Bottom", id="list.bottom", show=False),
    ]

    class RowsAdded(Message):
        """Posted after each chunk of a fill: ``shown`` of ``total`` rows are in the table."""

        def __init__(self, table: VimTable, shown: int, total: int) -> None:
            super().__init__()
            self.table = table
            self.shown = shown
            self.total = total

    def __init__(self, *, id: str | None = None, fill_chunk: int = FILL_CHUNK) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._filling = 0
        self._frozen = False
        self.fill_chunk = fill_chunk

    @property
    def screenful(self) -> int:
        """At most the rows one screen can show (the terminal's height; the table is less)."""
        return max(self.app.size.height, 10)

    def fill(self, rows: Rows) -> None:
        """Replace every row, keeping the cursor on the same key; big tables fill in chunks.

        Rows already at the top in the same order with the same cells stay (a preview, or a reload
        that changed nothing). The first new chunk is a screenful, added at once; the rest follow a
        chunk per repaint, so a 10,000-row table shows at once and never freezes the keys.
        """
        keep = self.selected_key
        kept = self._shown_prefix(rows)
        if kept < self.row_count:
            self.clear()
            kept = 0
        self._filling += 1
        self._add_chunk(rows, kept, self.screenful, keep, self._filling)
        if len(rows) >= BIG_LIST_ROWS and not self._frozen:
            self._freeze()

    def _freeze(self) -> None:
        """A full collection walks every object: with 10,000 experiences loaded it stops the app for
        0.15-0.3 s, and one came in the middle of a big list's fill (or a forced one at its end) while
        the keys moved the cursor. When a big list starts to fill, its rows are all read: freeze what
        is alive then, so later full collections skip it (a few ms instead); the app thaws it when it
        ends. Only on the first fill of each table: a run reloads a visible list after every apply,
        and the rows a reload replaces are freed by their reference counts all the same. Garbage in a
        cycle at that moment waits for the app's end (measured: 8,000 objects for Memories, 37,000
        for History, once each)."""
        self._frozen = True
        gc.freeze()

    def _shown_prefix(self, rows: Rows) -> int:
        """How many rows the table holds, when they are exactly the first ``rows``; else 0."""
        shown = self.ordered_rows
        if len(shown) > len(rows):
            return 0
        for row, (key, cells) in zip(shown, rows, strict=False):
            if row.key.value != key or self.get_row(row.key) != list(cells):
                return 0
        return len(shown)

    def _add_chunk(self, rows: Rows, start: int, size: int, keep: str | None, fill: int) -> None:
        if fill != self._filling:
            return  # a newer fill replaced this one
        end = min(start + size, len(rows))
        for key, cells in rows[start:end]:
            self.add_row(*cells, key=key)
        if keep is not None and keep in self.rows:
            self.move_to_key(keep)
            keep = None
        self.post_message(self.RowsAdded(self, end, len(rows)))
        if end < len(rows):
            self.call_after_refresh(self._add_chunk, rows, end, self.fill_chunk, keep, fill)

    def action_cursor_right(self) -> None:
        """In a row table, Right shows the next column whole (not one cell of it per press)."""
        if self.cursor_type != "row":
            super().action_cursor_right()
            return
        later = [edge for edge in self._column_edges() if edge > self.scroll_x]
        self.scroll_to(x=min(later[0], self.max_scroll_x) if later else self.max_scroll_x, animate=False)

    def action_cursor_left(self) -> None:
        if self.cursor_type != "row":
            super().action_cursor_left()
            return
        earlier = [edge for edge in self._column_edges() if edge < self.scroll_x]
        self.scroll_to(x=earlier[-1] if earlier else 0, animate=False)

    def _column_edges(self) -> list[int]:
        """Where each column starts, in cells from the table's left edge."""
        edges, at = [], 0
        for column in self.ordered_columns:
            edges.append(at)
            at += column.get_render_width(self)
        return edges

    @property
    def selected_key(self) -> str | None:
        """The key of the row under the cursor (None on an empty table)."""
        if not self.row_count:
            return None
        return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)

    def move_to_key(self, key: str | None) -> None:
        """Put the cursor on ``key`` if it is still there (after a refill)."""
        if key is None:
            return
        with suppress(RowDoesNotExist):  # the row is gone: the cursor stays where the refill left it
            self.move_cursor(row=self.get_row_index(key), animate=False)
