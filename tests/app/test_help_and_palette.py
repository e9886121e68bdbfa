"""Help shows the keys of the screen it was opened on (``a``: every screen's), scrolls with j/↓ and
says how to close; the palette names where each command belongs and offers the other screens' too."""

from __future__ import annotations

from app_support import MakeApp, screen_text, settle
from textual.command import DiscoveryHit

from ovtui.app.commands import BindingCommands
from ovtui.app.screens.help import HelpScreen
from ovtui.app.screens.memories import MemoriesScreen
from ovtui.app.widgets.vim_table import VimTable
from ovtui.wiring.workspace import Workspace


def contexts(help_screen: HelpScreen) -> set[str]:
    table = help_screen.query_one("#help-table", VimTable)
    return {str(table.get_row(key)[0]) for key in table.keys}


async def test_help_shows_the_screen_s_keys_scrolls_and_says_how_to_close(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        await pilot.press("question_mark")
        await settle(app, pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        assert contexts(help_screen) == {"App", "Memories", "Lists", "Help"}
        assert "esc or q closes" in screen_text(app)
        await pilot.press("a")
        await pilot.pause()
        assert {"Review", "History", "Run"} <= contexts(help_screen)
        table = help_screen.query_one("#help-table", VimTable)
        for key in ("j", "down") * 15:
            await pilot.press(key)
        await pilot.pause()
        assert table.cursor_row == 30 and table.scroll_y > 0  # the cursor moved and the list followed
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, MemoriesScreen)


async def test_the_palette_names_contexts_and_offers_the_other_screens_commands(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        provider = BindingCommands(app.screen)
        titles = [str(hit.text) async for hit in provider.discover() if isinstance(hit, DiscoveryHit)]
        assert not any("VimTable" in t or "Screen)" in t for t in titles), titles
        assert "Filter (Memories)" in titles and "Down (Lists)" in titles
        assert any(t.endswith("(Review)") for t in titles) and any(t.endswith("(History)") for t in titles)
