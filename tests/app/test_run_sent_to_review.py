"""A stream's status counts the plans it sent to review while they are pending, not after."""

from __future__ import annotations

import pytest
from app_support import PLAN_ID, MakeApp, park_demo_plan, settle, widget_text

from ovtui.app.app import OvtuiApp
from ovtui.core.events import Event
from ovtui.wiring.workspace import Workspace

AT = 1_790_000_000.0


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_plan_settled_in_review_leaves_the_streams_status(
    workspace: Workspace, make_app: MakeApp, size: tuple[int, int]
) -> None:
    park_demo_plan(workspace)
    app: OvtuiApp = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        app.pump(Event("run_started", {"command": "stream", "run_id": "r1", "dataset": "support"}, AT))
        app.pump(Event("plan_pending", {"plan_id": PLAN_ID, "items": 2, "waiting": False}, AT + 1))
        await settle(app, pilot)
        status = app.screen.query_one("#run-status")
        assert "1 plan(s) in review" in widget_text(app, status)

        workspace.review.discard_pending(PLAN_ID)  # as Review's X does
        app.pending_changed()
        await settle(app, pilot)
        assert "in review" not in widget_text(app, status)
        assert "stream: watching inbox/rollouts/" in widget_text(app, status)
