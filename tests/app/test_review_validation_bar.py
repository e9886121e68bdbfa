"""Review shows the plan's validation before and after as a small horizontal bar chart in the queue:
one bar per count of cases passing, on an axis from none to all of the cases, labelled with the
counts and the change so it reads without colour; a plan that was not validated shows no chart."""

from __future__ import annotations

from app_support import MakeApp, demo_plan, park_undecided, press_and_settle, screen_text, widget_text

from ovtui.app.views.review import PlanValidation, plan_validation
from ovtui.app.widgets.charts import ValidationBarPlot
from ovtui.wiring.workspace import Workspace

VALIDATION = {"before": 6, "after": 9, "cases": 12, "gained": [1, 2, 3], "lost": [], "flipped": {}}


def test_the_labels_carry_the_counts_and_the_signed_change() -> None:
    assert plan_validation(VALIDATION) == PlanValidation(cases=12, before=6, after=9)
    assert PlanValidation(12, 6, 9).labels == ("before 6/12", "after 9/12 +3")
    assert PlanValidation(12, 6, 0).labels == ("before 6/12", "after 0/12 −6")
    assert PlanValidation(12, 6, 6).change == "±0"
    assert plan_validation(None) is None and plan_validation({**VALIDATION, "cases": 0}) is None


async def test_review_charts_the_selected_plans_validation_at_the_floor(
    workspace: Workspace, make_app: MakeApp
) -> None:
    plan = demo_plan()
    plan.metadata["validation"] = VALIDATION
    park_undecided(workspace, plan)
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "2")
        chart = app.screen.query_one("#plan-validation", ValidationBarPlot)
        assert chart.display and chart.bars == {"before 6/12": 6, "after 9/12 +3": 9}
        assert chart.cases == 12
        shown = widget_text(app, chart)
        assert "plan validation" in shown and "before 6/12 █" in shown and "after 9/12 +3 █" in shown
        # Small enough that the queue keeps its items, the detail its target and the screen its footer.
        assert chart.size.height == 5
        text = screen_text(app)
        items = ("reservation_cancellation", "baggage_allowance", "refund_status")
        assert all(name in text for name in items)
        assert "memories/experiences/reservation_cancell" in text
        assert "p Apply…" in text


async def test_a_plan_not_validated_shows_no_chart(workspace: Workspace, make_app: MakeApp) -> None:
    park_undecided(workspace, demo_plan())
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "2")
        assert not app.screen.query_one("#plan-validation", ValidationBarPlot).display
        assert "plan validation" not in screen_text(app)
