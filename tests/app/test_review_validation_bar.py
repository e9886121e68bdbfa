"""Review shows the plan's validation before and after as two plain-text bars in the queue: solid
cells for passing cases, hollow for the rest, and the counts, so it reads without colour."""

from __future__ import annotations

from app_support import MakeApp, demo_plan, park_undecided, press_and_settle, screen_text

from ovtui.app.views.review import BAR_CELLS, validation_bars
from ovtui.wiring.workspace import Workspace

VALIDATION = {"before": 6, "after": 9, "cases": 12, "gained": [1, 2, 3], "lost": [], "flipped": {}}


def test_the_bars_are_as_long_as_the_share_of_cases_passing() -> None:
    shown = validation_bars(VALIDATION).plain.split("\n")
    assert shown == [
        "plan validation",
        f"before {'█' * 8}{'░' * (BAR_CELLS - 8)}  6/12",
        f"after  {'█' * 12}{'░' * (BAR_CELLS - 12)}  9/12 +3",
    ]
    worse = validation_bars({**VALIDATION, "after": 0}).plain
    assert worse.endswith(f"after  {'░' * BAR_CELLS}  0/12 −6")
    assert validation_bars(None).plain == "" and validation_bars({**VALIDATION, "cases": 0}).plain == ""


async def test_review_shows_the_bars_of_the_plan_selected_at_the_floor(
    workspace: Workspace, make_app: MakeApp
) -> None:
    plan = demo_plan()
    plan.metadata["validation"] = VALIDATION
    park_undecided(workspace, plan)
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "2")
        text = screen_text(app)
        assert "plan validation" in text
        assert f"before {'█' * 8}{'░' * (BAR_CELLS - 8)}  6/12" in text
        assert f"after  {'█' * 12}{'░' * (BAR_CELLS - 12)}  9/12 +3" in text
