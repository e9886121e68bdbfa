"""A table of rows on Textual's line API, with vim keys (j/k/g/G), each binding with an id so
``[keys]`` can remap it.

The rows live in a plain list (keys and cells); only the lines on screen are ever formatted, and each
row's formatted text is kept until that row changes. Rows added below the screen cost no repaint of
the rows already shown, so a 10,000-row list is filled at once and every row is reachable at once.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

Rows = Sequence[tuple[str, Sequence[object]]]

# The first fill of a table of at least this many rows freezes what is alive (see ``_freeze``).
BIG_LIST_ROWS = 1_000
# No column is wider than this: one long cell must not push the others off the screen.
COLUMN_CAP = 48
# Before each row: the cursor's mark (a shape, so it reads without colour) between two spaces; the
# first is the column a focused pane's bar covers. The table without focus marks its cursor row
# hollow, so which list has the focus reads without colour too.
CURSOR_MARK = " ▶ "
BLURRED_CURSOR_MARK = " ▷ "
NO_MARK = "   "
MARK_WIDTH = 3
GAP = 1  # cells between two columns
HEADER = -1  # the header's line among the rows' formatted lines


@dataclass
class Column:
    label: str
    key: str
    gives_way: bool = False  # cut (…) before the table scrolls sideways when the screen is narrow
    content_width: int = 0  # the widest cell so far, header included
    width: int = 0  # as drawn: the content width capped, less what it gave way


class VimTable(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    VimTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        scrollbar-size-vertical: 1;
        &:focus { background-tint: $foreground 5%; }
        & > .vim-table--header { text-style: bold; background: $panel; color: $foreground; }
        & > .vim-table--even-row { background: $surface-lighten-1 50%; }
        &:dark > .vim-table--even-row { background: $surface-darken-1 40%; }
        & > .vim-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .vim-table--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
    }
    """
    COMPONENT_CLASSES: ClassVar[set[str]] = {"vim-table--header", "vim-table--even-row", "vim-table--cursor"}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", id="list.down", show=False),
        Binding("k", "cursor_up", "Up", id="list.up", show=False),
        Binding("g", "scroll_top", "Top", id="list.top", show=False),
        Binding("G", "scroll_bottom", "Bottom", id="list.bottom", show=False),
        Binding("down", "cursor_down", "Down", id="list.down_arrow", show=False),
        Binding("up", "cursor_up", "Up", id="list.up_arrow", show=False),
        Binding("home", "scroll_top", "Top", id="list.home", show=False),
        Binding("end", "scroll_bottom", "Bottom", id="list.end", show=False),
        Binding("pagedown", "page_down", "Page down", id="list.page_down", show=False),
        Binding("pageup", "page_up", "Page up", id="list.page_up", show=False),
        Binding("right", "cursor_right", "Next column", id="list.right", show=False),
        Binding("left", "cursor_left", "Previous column", id="list.left", show=False),
        Binding("enter", "select_cursor", "Select", id="list.select", show=False),
    ]

    cursor_row: reactive[int] = reactive(0, repaint=False, init=False)
    """The index of the row under the cursor (0 on an empty table)."""

    class RowsAdded(Message):
        """Posted after a fill: ``shown`` of ``total`` rows are in the table (all of them)."""

        def __init__(self, table: VimTable, shown: int, total: int) -> None:
            super().__init__()
            self.table = table
            self.shown = shown
            self.total = total

    class RowMessage(Message):
        """About one row: its key and where it is."""

        def __init__(self, table: VimTable, cursor_row: int, key: str) -> None:
            super().__init__()
            self.table = table
            self.cursor_row = cursor_row
            self.key = key

        @property
        def control(self) -> VimTable:
            return self.table  # what ``@on(VimTable.RowHighlighted, "#id")`` matches

    class RowHighlighted(RowMessage):
        """The cursor came onto the row ``key`` (index ``cursor_row``), or the rows under it changed."""

    class RowSelected(RowMessage):
        """Enter, or a click, on the row ``key``."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.columns: list[Column] = []
        self.keys: list[str] = []  # the rows' keys, in the order shown
        self._cells: list[Sequence[object]] = []
        self._index: dict[str, int] = {}  # key → row index
        self._lines: dict[int, Strip] = {}  # row index → its formatted cells, until the row changes
        self._frozen = False

    # --- the rows ---------------------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self.keys)

    @property
    def screenful(self) -> int:
        """At most the rows one screen can show (the terminal's height; the table is less)."""
        return max(self.app.size.height, 10)

    @property
    def selected_key(self) -> str | None:
        """The key of the row under the cursor (None on an empty table)."""
        return self.keys[self.cursor_row] if self.keys else None

    def add_column(self, label: str, *, key: str | None = None, gives_way: bool = False) -> None:
        """A column at the right; ``gives_way``: it is cut before the table scrolls sideways."""
        self.columns.append(Column(label, key or label, gives_way, content_width=cell_len(label)))
        self._measure(0)

    def add_columns(self, *labels: str) -> None:
        for label in labels:
            self.add_column(label)

    def get_row_at(self, index: int) -> Sequence[object]:
        return self._cells[index]

    def get_row(self, key: str) -> Sequence[object]:
        return self._cells[self._index[key]]

    def get_row_index(self, key: str) -> int:
        return self._index[key]

    def clear(self) -> None:
        """Every row goes (the columns stay)."""
        self._replace([], keep=None)

    def add_row(self, *cells: object, key: str | None = None) -> None:
        """One row at the bottom (keyed by its index unless ``key`` says)."""
        self._append([(str(len(self.keys)) if key is None else key, cells)])

    def fill(self, rows: Rows, *, widths: Sequence[int] | None = None) -> None:
        """Replace every row, keeping the cursor on the same key (else on the first row).

        Rows already at the top in the same order with the same cells stay as they are drawn (a
        preview, or a reload that changed nothing): only what follows them is added. ``widths``:
        the widest cell of each column over ``rows`` (``widest_cells``), measured by the caller in
        its thread: measuring 10,000 rows here held the screen for a tenth of a second.
        """
        kept = self._shown_prefix(rows)
        if kept < self.row_count:
            self._replace(rows, keep=self.selected_key, widths=widths)
        else:
            self._append(rows[kept:], widths=widths)
        self.post_message(self.RowsAdded(self, len(rows), len(rows)))
        if len(rows) >= BIG_LIST_ROWS and not self._frozen:
            self._freeze()

    def sort(self, column_key: str, *, reverse: bool = False) -> None:
        """Order the rows by the cells of one column; the cursor stays on its row."""
        at = next(i for i, column in enumerate(self.columns) if column.key == column_key)
        rows = sorted(
            zip(self.keys, self._cells, strict=True), key=lambda row: sort_value(row[1][at]), reverse=reverse
        )
        self._replace(rows, keep=self.selected_key)

    def move_to_key(self, key: str | None) -> None:
        """Put the cursor on ``key`` if it is still there (after a refill)."""
        if key is not None and key in self._index:
            self.move_cursor(row=self._index[key])

    def move_cursor(self, *, row: int) -> None:
        self.cursor_row = row

    def _freeze(self) -> None:
        """A full collection walks every object: with 10,000 experiences loaded it stops the app for
        0.15-0.3 s, and one came while the keys moved the cursor. When a big list fills, its rows
        are all read: freeze what is alive then, so later full collections skip it (a few ms
        instead); the app thaws it when it ends. Only on the first fill of each table: a run reloads
        a visible list after every apply, and the rows a reload replaces are freed by their
        reference counts all the same."""
        self._frozen = True
        gc.freeze()

    def _shown_prefix(self, rows: Rows) -> int:
        """How many rows the table holds, when they are exactly the first ``rows``; else 0."""
        if len(self.keys) > len(rows):
            return 0
        for key, cells, (new_key, new_cells) in zip(self.keys, self._cells, rows, strict=False):
            if key != new_key or list(cells) != list(new_cells):
                return 0
        return len(self.keys)

    def _replace(self, rows: Rows, *, keep: str | None, widths: Sequence[int] | None = None) -> None:
        """New rows; the cursor on ``keep`` where it is among them, else on the first row."""
        self.keys, self._cells, self._index = [], [], {}
        for column in self.columns:
            column.content_width = cell_len(column.label)
        self._store(rows)
        self._measure(0, widths)
        self.set_reactive(VimTable.cursor_row, self._index.get(keep, 0) if keep is not None else 0)
        self._scroll_to_cursor()
        self._highlight()

    def _append(self, rows: Rows, *, widths: Sequence[int] | None = None) -> None:
        start = len(self.keys)
        self._store(rows)
        self._measure(start, widths)
        if start == 0:
            self._highlight()
            return
        # Only the rows that come into view are drawn: the ones above them are as they were.
        top = round(self.scroll_y)
        first_new, past_view = (
            max(start, top),
            min(len(self.keys), top + self.scrollable_content_region.height - 1),
        )
        if first_new < past_view:
            self.refresh_lines(first_new + 1, past_view - first_new)

    def _store(self, rows: Rows) -> None:
        # Whole lists at a time (a Python loop over 10,000 rows held the screen for 30 ms).
        start = len(self.keys)
        keys = [key for key, _ in rows]
        self.keys.extend(keys)
        self._cells.extend(cells for _, cells in rows)
        self._index.update(zip(keys, range(start, start + len(keys)), strict=True))

    def _highlight(self) -> None:
        if self.keys:
            self.post_message(self.RowHighlighted(self, self.cursor_row, self.keys[self.cursor_row]))

    # --- the columns ------------------------------------------------------------------------------

    def _measure(self, start: int, widths: Sequence[int] | None = None) -> None:
        """Widen the columns to the cells of the rows from ``start`` (``widths``: as measured over
        them already); lay them out again if one grew."""
        if widths is None:
            widths = widest_cells(self._cells[start:], len(self.columns))
        grew = False
        for column, widest in zip(self.columns, widths, strict=False):
            if widest > column.content_width:
                column.content_width, grew = widest, True
        if grew or start == 0:
            self._lay_out_columns()
        else:
            self._set_virtual_height()

    def _lay_out_columns(self) -> None:
        """Each column as wide as its widest cell (capped); where the table is narrower than that,
        the columns that give way are cut first, the widest of them first (to nothing if they
        must); the rest scrolls sideways."""
        for column in self.columns:
            column.width = min(column.content_width, COLUMN_CAP)
        excess = self.body_width - (self.scrollable_content_region.width - MARK_WIDTH)
        cuttable = [c for c in self.columns if c.gives_way]
        while excess > 0:
            widest = max((c for c in cuttable if c.width), key=lambda c: c.width, default=None)
            if widest is None:
                break
            widest.width -= 1
            excess -= 1
        self._lines = {}  # every row is formatted again, to the new widths
        self.virtual_size = Size(MARK_WIDTH + self.body_width, len(self.keys) + 1)
        self.refresh()

    def _set_virtual_height(self) -> None:
        """The new height, without asking for the lines on screen again (a repaint would redraw
        every visible row); the scrollbars follow the layout."""
        self.set_reactive(VimTable.virtual_size, Size(self.virtual_size.width, len(self.keys) + 1))
        self.refresh(layout=True, repaint=False)

    @property
    def body_width(self) -> int:
        """The cells of every column, with the gaps between them."""
        return sum(column.width for column in self.columns) + GAP * max(len(self.columns) - 1, 0)

    @property
    def column_edges(self) -> list[int]:
        """Where each column starts, in cells from the left of the first column."""
        edges, at = [], 0
        for column in self.columns:
            edges.append(at)
            at += column.width + GAP
        return edges

    def get_content_width(self, container: Size, viewport: Size) -> int:
        """A table as wide as its columns would be uncut (the width an ``auto`` width takes)."""
        natural = sum(min(c.content_width, COLUMN_CAP) for c in self.columns) + GAP * max(
            len(self.columns) - 1, 0
        )
        return MARK_WIDTH + natural + 1  # and the vertical scrollbar

    def on_resize(self, event: events.Resize) -> None:
        self._lay_out_columns()

    # --- drawing ----------------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        scroll_x, scroll_y = self.scroll_offset
        if y == 0:
            style = self.get_component_rich_style("vim-table--header")
            return self._line(self._header(), NO_MARK, scroll_x, width, style)
        index = scroll_y + y - 1
        if index >= len(self.keys):
            return Strip.blank(width, self.rich_style)
        if index == self.cursor_row:
            mark = CURSOR_MARK if self.has_focus else BLURRED_CURSOR_MARK
            style = self.rich_style + self.get_component_rich_style("vim-table--cursor")
        else:
            mark = NO_MARK
            style = self.rich_style
            if index % 2:
                style += self.get_component_rich_style("vim-table--even-row")
        return self._line(self._row_line(index), mark, scroll_x, width, style)

    def _line(self, body: Strip, mark: str, scroll_x: int, width: int, style: Style) -> Strip:
        cells = body.crop_extend(scroll_x, scroll_x + width - MARK_WIDTH, None)
        return Strip([Segment(mark), *cells]).apply_style(style).crop_extend(0, width, style)

    def _row_line(self, index: int) -> Strip:
        line = self._lines.get(index)
        if line is None:
            line = self._lines[index] = self._format(self._cells[index])
        return line

    def _header(self) -> Strip:
        line = self._lines.get(HEADER)
        if line is None:
            line = self._lines[HEADER] = self._format([column.label for column in self.columns])
        return line

    def _format(self, cells: Sequence[object]) -> Strip:
        """The cells, each cut or padded to its column's width, one gap apart."""
        line = Text(no_wrap=True, end="")
        for at, (column, cell) in enumerate(zip(self.columns, cells, strict=False)):
            text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
            text.truncate(column.width, overflow="ellipsis", pad=True)
            line.append_text(text)
            if at < len(self.columns) - 1:
                line.append(" " * GAP)
        return Strip(line.render(self.app.console))

    # --- the cursor -------------------------------------------------------------------------------

    def validate_cursor_row(self, row: int) -> int:
        return max(0, min(row, len(self.keys) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        self.refresh_line(old + 1)
        self.refresh_line(new + 1)
        self._scroll_to_cursor()
        if self.keys:
            self.post_message(self.RowHighlighted(self, new, self.keys[new]))

    def _scroll_to_cursor(self) -> None:
        row = Region(0, self.cursor_row + 1, self.scrollable_content_region.width, 1)
        self.scroll_to_region(
            row, spacing=Spacing(top=1), animate=False, force=True, immediate=True, x_axis=False
        )

    def _on_focus(self, event: events.Focus) -> None:
        self.refresh_line(self.cursor_row + 1)  # its mark turns solid

    def _on_blur(self, event: events.Blur) -> None:
        self.refresh_line(self.cursor_row + 1)

    def action_cursor_down(self) -> None:
        self.cursor_row += 1

    def action_cursor_up(self) -> None:
        self.cursor_row -= 1

    def action_scroll_top(self) -> None:
        self.cursor_row = 0

    def action_scroll_bottom(self) -> None:
        self.cursor_row = len(self.keys) - 1

    def action_page_down(self) -> None:
        self.cursor_row += self.page_rows

    def action_page_up(self) -> None:
        self.cursor_row -= self.page_rows

    @property
    def page_rows(self) -> int:
        return max(self.scrollable_content_region.height - 1, 1)  # less the header

    def action_select_cursor(self) -> None:
        if self.keys:
            self.post_message(self.RowSelected(self, self.cursor_row, self.keys[self.cursor_row]))

    def action_cursor_right(self) -> None:
        """Right shows the next column whole (not one cell of it per press)."""
        later = [edge for edge in self.column_edges if edge > self.scroll_x]
        self.scroll_to(x=min(later[0], self.max_scroll_x) if later else self.max_scroll_x, animate=False)

    def action_cursor_left(self) -> None:
        earlier = [edge for edge in self.column_edges if edge < self.scroll_x]
        self.scroll_to(x=earlier[-1] if earlier else 0, animate=False)

    def on_click(self, event: events.Click) -> None:
        """A click on a row puts the cursor there and selects it (as Enter does)."""
        offset = event.get_content_offset(self)
        if offset is None or offset.y == 0:
            return  # on the header or the scrollbars
        index = round(self.scroll_y) + offset.y - 1
        if index < len(self.keys):
            self.cursor_row = index
            self.action_select_cursor()


def widest_cells(rows: Sequence[Sequence[object]], columns: int) -> list[int]:
    """The widest cell of each of the first ``columns`` columns of ``rows`` (0 for no rows): what
    ``fill(widths=…)`` takes, safe to compute in any thread."""
    widths = []
    for at in range(columns):
        column = [cells[at] for cells in rows]
        if set(map(type, column)) <= {str}:
            # Plain strings, measured a column at a time and each distinct one once (a column of
            # 10,000 holds a few hundred): an ASCII text is as wide as it is long.
            texts: set[str] = set(column)  # type: ignore[arg-type]
            widths.append(max((len(t) if t.isascii() else cell_len(t) for t in texts), default=0))
        else:
            widths.append(max(map(cell_width, column), default=0))
    return widths


def cell_width(cell: object) -> int:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    # An ASCII text is as wide as it is long: measuring 10,000 rows' cells one by one is the
    # bulk of a big fill otherwise.
    return len(text) if text.isascii() else cell_len(text)


def sort_value(cell: object) -> Any:
    """What a cell sorts by: a Text by its text, anything else as it is."""
    return cell.plain if isinstance(cell, Text) else cell
