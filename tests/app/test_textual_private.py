"""The private Textual internal behind ``ovtui.app.textual_private``: fails the day Textual changes it."""

from __future__ import annotations

from app_support import MakeApp
from textual.app import App, ComposeResult
from textual.geometry import Size
from textual.scroll_view import ScrollView

from ovtui.app.textual_private import set_scroll_range
from ovtui.service import Workspace


class OneView(App[None]):
    def compose(self) -> ComposeResult:
        yield ScrollView()


async def test_set_scroll_range_sets_the_virtual_size_and_the_scroll_limits() -> None:
    app = OneView()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(ScrollView)
        set_scroll_range(view, Size(40, 100))
        await pilot.pause()
        assert view.virtual_size == Size(40, 100)
        assert view.max_scroll_y == 100 - view.scrollable_content_region.height > 0
        view.scroll_end(animate=False, immediate=True)
        await pilot.pause()
        assert view.scroll_y == view.max_scroll_y


async def test_screen_text_reads_what_the_terminal_shows(workspace: Workspace, make_app: MakeApp) -> None:
    """``app_support.screen_text`` reads the compositor (private): the tests' one window on the screen."""
    from app_support import screen_text

    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert len(lines) == 24 and "1 Run" in lines[0] and "Train (t)" in screen_text(app)
