"""The list widget every screen uses, in a bare app: keys, appends, big fills, clicks, narrow widths."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from app_support import screen_text
from rich.text import Text
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.strip import Strip

from ovtui.app.widgets.vim_table import VimTable


def rows(count: int, start: int = 0) -> list[tuple[str, Sequence[object]]]:
    return [(f"r{i:05}", (f"row {i:05}", Text("apply"), "+1~0−0")) for i in range(start, start + count)]


class TableApp(App[None]):
    CSS = "VimTable { height: 1fr; }"  # as the screens' lists: a row added does not resize it

    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[str] = []
        self.selected: list[str] = []
        self.drawn: list[int] = []  # the content line of every render_line call

    def compose(self) -> ComposeResult:
        yield VimTable(id="table")

    def on_mount(self) -> None:
        table = self.query_one(VimTable)
        table.add_columns("name", "kind", "+~−")
        original = table.render_line

        def render_line(y: int) -> Strip:
            self.drawn.append(round(table.scroll_y) + y)
            return original(y)

        table.render_line = render_line  # type: ignore[method-assign]

    def on_vim_table_row_highlighted(self, event: VimTable.RowHighlighted) -> None:
        self.highlighted.append(event.key)

    def on_vim_table_row_selected(self, event: VimTable.RowSelected) -> None:
        self.selected.append(event.key)


def screen_lines(app: App[None]) -> list[str]:
    return screen_text(app).splitlines()


@asynccontextmanager
async def a_table(size: tuple[int, int]) -> AsyncIterator[tuple[TableApp, VimTable, Pilot[None]]]:
    app = TableApp()
    async with app.run_test(size=size) as pilot:
        yield app, app.query_one(VimTable), pilot


async def test_the_cursor_moves_with_vim_keys_and_is_marked_without_colour() -> None:
    async with a_table(size=(60, 12)) as (app, table, pilot):
        table.fill(rows(50))
        await pilot.pause()
        await pilot.press("j", "j")
        assert table.cursor_row == 2 and table.selected_key == "r00002"
        assert app.highlighted[-1] == "r00002"
        await pilot.press("k")
        assert table.selected_key == "r00001"
        await pilot.press("G")
        await pilot.pause()
        assert table.selected_key == "r00049" and table.scroll_y > 0
        await pilot.press("g")
        assert table.cursor_row == 0
        await pilot.press("pagedown")
        assert table.cursor_row == 11  # a screen of rows (12 lines) less the header
        await pilot.pause()
        lines = screen_lines(app)
        assert lines[0].lstrip().startswith("name")  # the header stays at the top
        marked = [line for line in lines if line.startswith(" ▶ ")]
        assert marked == [next(line for line in lines if "row 00011" in line)]


async def test_rows_appended_below_leave_the_cursor_and_the_drawn_rows_alone() -> None:
    async with a_table(size=(60, 12)) as (app, table, pilot):
        table.fill(rows(100))
        await pilot.press("j", "j", "j")
        await pilot.pause()
        app.drawn.clear()
        table.fill(rows(1_000))  # the same 100 rows first, then 900 more
        await pilot.pause()
        assert table.row_count == 1_000 and table.selected_key == "r00003"
        assert app.drawn == []  # none of the rows on screen was drawn again
        await pilot.press("G")
        await pilot.pause()
        assert table.selected_key == "r00999"


async def test_rows_added_into_view_are_drawn() -> None:
    async with a_table(size=(60, 12)) as (app, table, pilot):
        table.fill(rows(3))
        await pilot.pause()
        app.drawn.clear()
        table.add_row("row 00003", Text("apply"), "+0~0−1", key="new")
        await pilot.pause()
        assert app.drawn == [4]  # its line, under the header and three rows
        assert any("row 00003" in line for line in screen_lines(app))


async def test_g_after_a_big_fill_reaches_the_last_key() -> None:
    async with a_table(size=(80, 24)) as (app, table, pilot):
        table.fill(rows(10_000))
        await pilot.press("G")
        await pilot.pause()
        assert table.selected_key == "r09999"
        assert any("row 09999" in line for line in screen_lines(app))


async def test_a_refill_keeps_the_cursor_on_its_key_or_goes_to_the_top() -> None:
    async with a_table(size=(60, 12)) as (app, table, pilot):
        table.fill(rows(20))
        table.move_to_key("r00007")
        await pilot.pause()
        table.fill([row for row in rows(20) if int(row[0][1:]) % 2])  # a filter keeps the odd rows
        await pilot.pause()
        assert table.selected_key == "r00007" and table.cursor_row == 3
        assert any(line.startswith(" ▶ row 00007") for line in screen_lines(app))
        table.fill(rows(5, start=100))  # the row is gone
        await pilot.pause()
        assert table.selected_key == "r00100" and app.highlighted[-1] == "r00100"
        table.clear()
        await pilot.pause()
        assert table.row_count == 0 and table.selected_key is None


async def test_sort_keeps_the_cursor_on_its_row() -> None:
    async with a_table(size=(60, 12)) as (_app, table, pilot):
        table.fill(rows(5))
        table.move_to_key("r00001")
        table.sort("name", reverse=True)
        await pilot.pause()
        assert table.keys == ["r00004", "r00003", "r00002", "r00001", "r00000"]
        assert table.selected_key == "r00001"


async def test_a_click_selects_the_row() -> None:
    async with a_table(size=(60, 12)) as (app, table, pilot):
        table.fill(rows(20))
        await pilot.pause()
        await pilot.click(VimTable, offset=(4, 3))  # the header, then rows 0, 1, 2
        assert table.selected_key == "r00002" and app.selected == ["r00002"]
        await pilot.press("enter")
        assert app.selected == ["r00002", "r00002"]


async def test_a_narrow_table_cuts_the_column_that_gives_way_then_scrolls_by_columns() -> None:
    async with a_table(size=(30, 10)) as (app, table, pilot):
        table.add_column("about", gives_way=True)
        table.fill([("a", ("2026-11-30 12:00:00", "apply", "+1~0−0", "plan with a long summary"))])
        await pilot.pause()
        # 30 cells less the scrollbar and the mark (3): the time, kind and counts stay whole
        line = next(line for line in screen_lines(app) if line.startswith(" ▶ "))
        assert "2026-11-30 12:00:00 apply" in line and "plan with a long summary" not in line
        assert table.max_scroll_x > 0  # the counts do not fit beside them: the table scrolls
        await pilot.press("right")
        await pilot.pause()
        # the next column starts at the left edge, whole (or as far as the table goes)
        assert table.scroll_x == min(table.column_edges[1], table.max_scroll_x) > 0
        await pilot.press("left")
        await pilot.pause()
        assert table.scroll_x == 0


async def test_a_wide_table_shows_every_column_whole() -> None:
    async with a_table(size=(100, 10)) as (app, table, pilot):
        table.add_column("about", gives_way=True)
        table.fill([("a", ("2026-11-30 12:00:00", "apply", "+1~0−0", "plan with a long summary"))])
        await pilot.pause()
        assert table.max_scroll_x == 0
        assert any("plan with a long summary" in line for line in screen_lines(app))
