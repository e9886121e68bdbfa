"""The private Textual internal behind ``ovtui.app.textual_private``: fails the day Textual changes it."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from app_support import MakeApp, screen_text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.color import Color
from textual.dom import DOMNode
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.widgets import Footer, Label

from ovtui.app.textual_private import (
    footer_bindings_ready,
    footer_key_of,
    set_scroll_range,
    styles_are_current,
)
from ovtui.app.widgets.footer import KeyFooter
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


class KeysFooter(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding(k, f"notify('{k}')", f"key {k}") for k in "abcdef"]

    def compose(self) -> ComposeResult:
        yield KeyFooter()


@pytest.mark.parametrize("footer_class", [Footer, KeyFooter])
async def test_a_footers_keys_are_styled_once_as_they_mount_and_look_the_same(
    footer_class: type[Footer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Textual's Footer styles each bound key again after its mount (its ``compact`` starts True and
    is bound to the footer's False); KeyFooter's keys carry the footer's value from the start, so
    no key is styled after it mounted, and the footer draws the same."""
    restyled: list[str] = []
    update_styles = App.update_styles

    def counted(app: App[Any], node: DOMNode, animate: bool = True) -> None:
        if footer_key_of(node) not in (None, "ctrl+p"):  # type: ignore[arg-type]
            restyled.append(str(node.classes))
        update_styles(app, node, animate)

    monkeypatch.setattr(App, "update_styles", counted)

    class Shown(KeysFooter):
        def compose(self) -> ComposeResult:
            yield footer_class()

    app = Shown()
    async with app.run_test(size=(100, 3)) as pilot:
        await pilot.pause()
        footer = app.query_one(footer_class)
        keys = [w for w in footer.children if footer_key_of(w) not in (None, "ctrl+p")]
        assert [footer_key_of(w) for w in keys] == list("abcdef")
        assert all(not w.has_class("-compact") and not w.compact for w in keys)  # type: ignore[attr-defined]
        drawn = screen_text(app)
    assert "key a" in drawn and "key f" in drawn
    if footer_class is Footer:  # what KeyFooter spares: Textual still does it, so the test means it
        assert len(restyled) >= 6
    else:
        assert restyled == []
