"""The footer is recomposed when the keys it shows change, not at every bindings signal."""

from __future__ import annotations

from typing import Any

from app_support import MakeApp, press_and_settle, screen_text, settle
from textual.app import App
from textual.widget import Widget
from textual.widgets import Footer

from ovtui.app.textual_private import footer_key_of
from ovtui.wiring.workspace import Workspace


def footer_keys(app: App[Any]) -> list[Widget]:
    footer = app.screen.query_one(Footer)
    return [w for w in footer.walk_children(Widget) if footer_key_of(w) is not None]


async def test_the_footer_keeps_its_keys_through_focus_and_resume_and_follows_a_remap(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        keys = footer_keys(app)
        assert "Reload" in screen_text(app).splitlines()[-1] and keys

        # The focus moves to the view and back, the screen is left and shown again: each is a
        # bindings signal, and the same keys show, so the same widgets stay.
        await press_and_settle(pilot, "l")
        assert app.focused is not None and app.focused.id == "memory-view"
        await press_and_settle(pilot, "h", "3", "4")
        assert footer_keys(app) == keys and all(a is b for a, b in zip(footer_keys(app), keys, strict=True))

        # In the filter, the letters are the filter's: the footer no longer offers `e` or `t`.
        await press_and_settle(pilot, "slash")
        assert " e Edit" not in screen_text(app).splitlines()[-1]
        await press_and_settle(pilot, "escape")
        assert " e Edit" in screen_text(app).splitlines()[-1]

        # A remapped key is a change: the footer shows the new key.
        app.set_keymap({"memories.reload": "ctrl+r"})
        await settle(app, pilot)
        assert "^r Reload" in screen_text(app).splitlines()[-1]
        assert "ctrl+r" in [footer_key_of(w) for w in footer_keys(app)]
