"""The private Textual internal behind ``ovtui.app.textual_private``: fails the day Textual changes it."""

from __future__ import annotations

from app_support import MakeApp
from textual.app import App, ComposeResult
from textual.color import Color
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.widgets import Footer, Label

from ovtui.app.textual_private import footer_bindings_ready, set_scroll_range, styles_are_current
from ovtui.wiring.workspace import Workspace


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


class Modes(App[None]):
    """Two modes whose screens are built on first use, one of them marked as styled."""

    CSS = "Label { color: $primary; }"

    def __init__(self) -> None:
        super().__init__()
        self.css_refreshes = 0
        self.add_mode("plain", Screen)
        self.add_mode("marked", self._marked)

    def _marked(self) -> Screen[None]:
        screen: Screen[None] = LabelScreen()
        styles_are_current(screen, self)
        return screen

    def refresh_css(self, animate: bool = True) -> None:
        self.css_refreshes += 1
        super().refresh_css(animate)


class LabelScreen(Screen[None]):
    def compose(self) -> ComposeResult:
        yield Label("styled")


async def test_styles_are_current_spares_the_css_refresh_of_a_new_mode_and_keeps_its_styles() -> None:
    app = Modes()
    async with app.run_test(size=(40, 10)) as pilot:
        await pilot.pause()
        before = app.css_refreshes
        await app.switch_mode("plain")
        await pilot.pause()
        assert app.css_refreshes > before  # Textual's own way: a new screen re-parses the stylesheet
        app.theme = "textual-light"  # a theme chosen before the screen is built is the one it gets
        await pilot.pause()
        before = app.css_refreshes
        await app.switch_mode("marked")
        await pilot.pause()
        assert app.css_refreshes == before
        primary = app.current_theme.primary
        assert app.screen.query_one(Label).styles.color == Color.parse(primary)  # styled when it mounted


class WithFooter(App[None]):
    def compose(self) -> ComposeResult:
        yield Footer()


async def test_footer_bindings_ready_says_when_the_footer_has_had_its_screens_bindings() -> None:
    footer = Footer()
    assert footer_bindings_ready(footer) is False
    app = WithFooter()
    async with app.run_test(size=(40, 5)) as pilot:
        await pilot.pause()
        assert footer_bindings_ready(app.query_one(Footer)) is True
