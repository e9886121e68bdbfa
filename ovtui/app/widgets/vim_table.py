"""A DataTable with vim keys (j/k/g/G), each binding with an id so ``[keys]`` can remap it."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

FILL_CHUNK = 500
# The first chunk is small, so the first screenful shows at once.
FIRST_CHUNK = 100


class VimTable(DataTable[object]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", id="list.down", show=False),
        Binding("k", "cursor_up", "Up", id="list.up", show=False),
        Binding("g", "scroll_top", "Top", id="list.top", show=False),
        Binding("G", "scroll_bottom", "Bottom", id="list.bottom", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._filling = 0

    def fill(self, rows: list[tuple[str, Sequence[object]]]) -> None:
        """Replace every row, keeping the cursor on the same key; big tables fill in chunks.

        Adding thousands of rows at once measures them all in one go; chunks let key presses in
        between, so a 10,000-row table never freezes the screen.
        """
        keep = self.selected_key
        self.clear()
        self._filling += 1
        self._add_chunk(rows, 0, keep, self._filling)

    def _add_chunk(
        self, rows: list[tuple[str, Sequence[object]]], start: int, keep: str | None, fill: int
    ) -> None:
        if fill != self._filling:
            return  # a newer fill replaced this one
        end = start + (FIRST_CHUNK if start == 0 else FILL_CHUNK)
        for key, cells in rows[start:end]:
            self.add_row(*cells, key=key)
        if keep is not None and keep in self.rows:
            self.move_to_key(keep)
            keep = None
        if end < len(rows):
            self.call_after_refresh(self._add_chunk, rows, end, keep, fill)

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
