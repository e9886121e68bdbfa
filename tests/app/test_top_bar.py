"""The top bar's Dry run: the switch and the key set it once, as a value, and the bar says it in words."""

from __future__ import annotations

import asyncio

from app_support import MakeApp, notifications, press_and_settle, screen_text, settle
from textual import events
from textual.widgets import Switch

from ovtui.app.messages import DryRunToggled
from ovtui.app.widgets.top_bar import DRY_RUN_ON, TopBar
from ovtui.wiring.workspace import Workspace


def toggles(messages: list[object]) -> list[bool]:
    """Each DryRunToggled once (the hook sees a bubbling message at every node it passes)."""
    unique = {id(m): m for m in messages if isinstance(m, DryRunToggled)}
    return [m.dry_run for m in unique.values()]


async def test_two_dry_run_toggles_in_one_input_batch_settle_and_keep_the_app_responsive(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """`DD` in one input batch: the switch and the app settle on the same value without echoing each
    other (once they did, forever, at 100% CPU), and the app still answers keys."""
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        for _ in range(2):  # both keys queued before either is handled, as `tmux send-keys DD` does
            app.post_message(events.Key("D", "D"))
        await asyncio.wait_for(settle(app, pilot), timeout=5)
        switch = app.screen.query_one("#dry-run", Switch)
        assert app.dry_run is False and switch.value is False
        assert [n for n in notifications(messages) if "dry run" in n.lower()] == [
            "DRY RUN on: Apply writes only a dry-run record, no experience file",
            "Dry run off: Apply writes the experience files",
        ]
        assert toggles(messages) == []  # the keys never echoed up
        await pilot.press("2")  # still answers keys
        await settle(app, pilot)
        assert app.current_mode == "review"


async def test_the_switch_sets_dry_run_once_and_the_bar_says_it_in_words(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """A click on the switch goes up once as a value and comes back without an echo."""
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await pilot.click("#dry-run")
        await settle(app, pilot)
        assert app.dry_run is True
        assert toggles(messages) == [True]
        bar = app.screen.query_one(TopBar)
        assert str(bar.query_one("#dry-run-label").render()) == DRY_RUN_ON
        await press_and_settle(pilot, "D")
        assert app.dry_run is False and bar.query_one("#dry-run", Switch).value is False
        assert toggles(messages) == [True]


async def test_the_dry_run_switch_says_off_while_it_is_off(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        assert "Dry run off" in screen_text(app).splitlines()[0]
        await pilot.press("D")
        await pilot.pause()
        top = screen_text(app).splitlines()[0]
        assert "DRY RUN" in top and "Dry run off" not in top
