"""Every main screen's footer ends with the help key, and draws only keys that fit whole before it."""

from __future__ import annotations

from typing import Any

import pytest
from app_support import MakeApp, park_demo_plan, press_and_settle, screen_text
from textual.app import App
from textual.widget import Widget
from textual.widgets import Footer

from ovtui.app.textual_private import footer_key_of, footer_key_shown
from ovtui.wiring.workspace import Workspace

SIZES = [(80, 24), (120, 40), (130, 40)]


def drawn_keys(app: App[Any]) -> tuple[list[Widget], Widget]:
    """The footer's keys left of its docked help key, and the help key."""
    footer = app.screen.query_one(Footer)
    keys = [w for w in footer.walk_children(Widget) if footer_key_of(w) is not None]
    help_key = next(w for w in keys if w.has_class("-command-palette"))
    return [w for w in keys if w is not help_key], help_key


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("screen_key", ["1", "2", "C"])
async def test_each_key_in_the_footer_is_whole_and_the_help_key_ends_it(
    workspace: Workspace, make_app: MakeApp, size: tuple[int, int], screen_key: str
) -> None:
    park_demo_plan(workspace)  # Review has its many keys
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await press_and_settle(pilot, screen_key)
        if screen_key == "C":  # in field A the letters, `?` too, are text: the footer says how out
            assert "esc Leave field" in screen_text(app).splitlines()[-1]
            await press_and_settle(pilot, "escape")
        footer = screen_text(app).splitlines()[-1]
        assert footer.endswith("? keys")
        keys, help_key = drawn_keys(app)
        assert keys  # the first keys always fit
        for key in keys:  # none runs under the help key (Review's `u U▏` at 120 columns)
            assert key.region.right <= help_key.region.x, footer
            shown = footer_key_shown(key)
            assert shown is not None and " ".join(p for p in shown if p) in footer
