"""The Memories screen shows each memory's hotness (uses and recency); unused ones show a dash."""

from __future__ import annotations

from app_support import MakeApp, press_and_settle, screen_text

from ovtui.app.widgets.vim_table import VimTable
from ovtui.memory.hotness import HotnessLog
from ovtui.service import Workspace


async def test_hot_column(workspace: Workspace, make_app: MakeApp) -> None:
    used = next(iter(workspace.experiences().policies))
    HotnessLog(workspace.paths).record([used.uri] * 3)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        table = app.screen.query_one("#memories", VimTable)
        hot = {str(key.value): str(table.get_row(key)[-1]) for key in table.rows}
        assert hot[used.uri] not in ("–", "0.00") and float(hot[used.uri]) > 0.5
        assert [v for k, v in hot.items() if k != used.uri] == ["–"] * (len(hot) - 1)
        table.move_cursor(row=table.get_row_index(used.uri))
        await press_and_settle(pilot)
        assert "hotness " in screen_text(app)
