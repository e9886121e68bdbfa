"""VimTable's column widths measured off the UI thread are the ones it measures itself."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from ovtui.app.widgets.vim_table import VimTable, cell_width, widest_cells

ROWS = [
    ("a", ("plain", "–", Text("styled text"), 7)),
    ("b", ("表格 wide", "a longer ascii cell", Text("x"), 12345)),
    ("c", ("x", "–––", Text("表"), 0)),
]


def test_widest_cells_measures_each_column_as_its_cells_are_drawn() -> None:
    cells = [c for _, c in ROWS]
    assert widest_cells(cells, 4) == [max(cell_width(row[at]) for row in cells) for at in range(4)]
    assert widest_cells(cells, 4) == [9, 19, 11, 5] and widest_cells([], 2) == [0, 0]


class Table(App[None]):
    def compose(self) -> ComposeResult:
        yield VimTable(id="measured")
        yield VimTable(id="given")


async def test_a_fill_with_widths_lays_out_the_columns_as_one_that_measures() -> None:
    app = Table()
    async with app.run_test(size=(100, 20)) as pilot:
        measured, given = app.query_one("#measured", VimTable), app.query_one("#given", VimTable)
        for table in (measured, given):
            table.add_columns("name", "uses", "text", "n")
        measured.fill(ROWS)
        given.fill(ROWS, widths=widest_cells([c for _, c in ROWS], 4))
        await pilot.pause()
        assert [c.width for c in given.columns] == [c.width for c in measured.columns] == [9, 19, 11, 5]
