"""FieldDiff: a side-by-side (or unified) field diff drawn with the line API.

Rows are built once per diff as plain strings; a row is styled (word highlights) and wrapped
only when it scrolls into view. The view is unified when the widget is narrower than
``UNIFIED_BELOW`` columns or when ``unified`` is set (a key toggles it).
"""

from __future__ import annotations

import textwrap
from bisect import bisect_right
from itertools import accumulate
from typing import ClassVar

from rich.segment import Segment
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ovtui.app.textual_private import set_scroll_range
from ovtui.app.views.diff_model import DiffSection
from ovtui.app.views.diff_render import DiffRow, build_rows, row_height, row_lines

UNIFIED_BELOW = 100


class FieldDiff(ScrollView, can_focus=True):
    DEFAULT_CSS = """
    FieldDiff { height: 1fr; scrollbar-gutter: stable; }
    FieldDiff:focus { background-tint: $foreground 4%; }
    """
    # The keys of a focused diff (tab or l focuses it), with ids so the help lists them and [keys] moves them.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j,down", "scroll_down", "Line down", id="diff.down", show=False),
        Binding("k,up", "scroll_up", "Line up", id="diff.up", show=False),
        Binding("pagedown,space", "page_down", "Page down", id="diff.page_down", show=False),
        Binding("pageup,b", "page_up", "Page up", id="diff.page_up", show=False),
        Binding("home,g", "scroll_home", "Top", id="diff.top", show=False),
        Binding("end,G", "scroll_end", "Bottom", id="diff.bottom", show=False),
    ]

    unified: reactive[bool] = reactive(False)
    """Force the unified view even when there is room for two columns."""

    def __init__(self, *, placeholder: str = "nothing selected", id: str | None = None) -> None:
        super().__init__(id=id)
        self.placeholder = placeholder
        self._sections: list[DiffSection] = []
        self._rows: list[DiffRow] = []
        self._starts: list[int] = [0]  # first visual line of each row, plus the total at the end
        self._layout_key: tuple[int, bool] | None = None
        self._lines: LRUCache[int, list[Strip]] = LRUCache(512)

    @property
    def sections(self) -> list[DiffSection]:
        return self._sections

    @property
    def is_unified(self) -> bool:
        return self.unified or self.app.size.width < UNIFIED_BELOW

    def show(self, sections: list[DiffSection]) -> None:
        self._sections = sections
        self._rows = build_rows(sections)
        self._layout_key = None
        self.scroll_to(0, 0, animate=False)
        self._relayout()

    def scroll_to_hunk(self, number: int) -> None:
        """Bring the heading of content hunk ``number`` to the top (the hunk keys move there)."""
        self._relayout()
        for row, shown in enumerate(self._rows):
            if shown.kind == "hunk" and shown.hunk == number:
                self.scroll_to(y=self._starts[row], animate=False)
                return

    def watch_unified(self) -> None:
        self._relayout()

    def on_resize(self) -> None:
        self._relayout()

    def _relayout(self) -> None:
        width = max(1, self.scrollable_content_region.width or self.size.width)
        key = (width, self.is_unified)
        if key == self._layout_key:
            return
        self._layout_key = key
        self._lines.clear()
        heights = [row_height(row, width, key[1]) for row in self._rows]
        self._starts = [0, *accumulate(heights)]
        set_scroll_range(self, Size(width, self._starts[-1] or 1))
        self.refresh()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.size.width
        style = self.rich_style
        if not self._rows:  # wrapped: a narrow pane (80 columns) must not cut the hint short
            hint = textwrap.wrap(self.placeholder, max(width, 1))
            text = hint[index] if index < len(hint) else ""
            return Strip([Segment(text, style)]).extend_cell_length(width, style)
        if index >= self._starts[-1]:
            return Strip.blank(width, style)
        row = bisect_right(self._starts, index) - 1
        lines = self._row_strips(row)
        sub = index - self._starts[row]
        strip = lines[sub] if sub < len(lines) else Strip.blank(width, style)
        return strip.crop_extend(scroll_x, scroll_x + width, style)

    def _row_strips(self, row: int) -> list[Strip]:
        cached = self._lines.get(row)
        if cached is not None:
            return cached
        width, unified = self._layout_key or (self.size.width, self.is_unified)
        console = self.app.console
        style = self.rich_style
        strips = [
            Strip(Segment.apply_style(line.render(console), style), line.cell_len)
            for line in row_lines(self._rows[row], width, unified, console)
        ]
        self._lines[row] = strips
        return strips
