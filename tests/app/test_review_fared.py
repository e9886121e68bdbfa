"""Review: an item that edits an experience shows how that experience has fared (its current
version's uses and outcomes, and all its versions'), from the use ledger."""

from __future__ import annotations

from app_support import MakeApp, park_demo_plan, press_and_settle, widget_text
from textual.widgets import Static
from workspace_support import memory_of

from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import Outcome, Result, Use
from ovtui.wiring.workspace import Workspace

CANCEL = "viking://user/default/memories/experiences/reservation_cancellation.md"


async def test_an_edited_experience_shows_how_its_current_version_fared(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    current = workspace.reading.memory(CANCEL)
    assert current is not None
    version = current.version
    UseLedger(memory_of(workspace).paths).record(
        [
            Use(CANCEL, "session:old", "read", version - 1),
            Outcome("session:old", (Result("failure"),)),
            Use(CANCEL, "session:a", "find", version),
            Use(CANCEL, "session:b", "mcp", version),
            Outcome("session:a", (Result("success"),)),
            Outcome("session:b", (Result("failure"),)),
        ]
    )
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        header = app.screen.query_one("#item-header", Static)
        shown = widget_text(app, header)
        assert (
            f"fared: version {version} (current): 2 use(s) · 1 success, 1 failure · "
            "all versions 3 use(s) by 3 session(s), 1 success, 2 failure, success 33%"
        ) in shown, shown
        await press_and_settle(pilot, "j")  # a new experience: nothing has used it
        assert "fared" not in widget_text(app, header)
        await press_and_settle(pilot, "j")  # the delete of an experience never used
        assert "fared: version 1 (current) not used yet" in widget_text(app, header)
