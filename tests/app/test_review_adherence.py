"""Review: an item that edits an experience shows that experience's adherence (``ovtui
adherence``): its class, its counts and the directive it saw ignored most."""

from __future__ import annotations

from app_support import MakeApp, park_demo_plan, press_and_settle, widget_text
from textual.widgets import Static
from workspace_support import memory_of

from ovtui.plugins.adherence import Directive
from ovtui.train.adherence.store import AdherenceStore, Observation
from ovtui.wiring.workspace import Workspace

CANCEL = "viking://user/default/memories/experiences/reservation_cancellation.md"
ASK = Directive("confirm", ("cancel_reservation",), (), "ALWAYS ask before cancelling")


async def test_an_edited_experience_shows_its_adherence(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    seen = [
        Observation(CANCEL, "reservation_cancellation", 2, f"c{n}", True, ((ASK, "violated"),))
        for n in range(3)
    ]
    AdherenceStore(memory_of(workspace).paths).record(seen)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        header = " ".join(widget_text(app, app.screen.query_one("#item-header", Static)).split())
        assert "adherence: too few uses to say (3 use(s) it applied to, 5 needed)" in header, header
        assert "most ignored: ALWAYS ask before cancelling (3 of 3)" in header
        await press_and_settle(pilot, "j", "j")  # the delete of an experience nothing recorded
        assert "adherence: not recorded yet" in widget_text(app, app.screen.query_one("#item-header", Static))
