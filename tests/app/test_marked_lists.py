"""The cases list (``f``) and the dataset picker (``d``) mark the row under the cursor with ``▶``
and take ``g``/``G``, at the floor and at a larger size."""

from __future__ import annotations

import pytest
from app_support import MakeApp, press_and_settle, screen_text

from ovtui.app.screens.case_results import CaseResultsScreen
from ovtui.app.views.case_results import CaseResult
from ovtui.app.widgets.marked_options import CURSOR_MARK, MarkedOptionList
from ovtui.wiring.workspace import Workspace


def rows(count: int) -> list[CaseResult]:
    return [
        CaseResult(case=f"case_{i:02d}", group="fail→pass", before="failed", after="passed")
        for i in range(count)
    ]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_cases_list_marks_its_cursor_and_g_G_go_to_the_ends(
    workspace: Workspace, make_app: MakeApp, size: tuple[int, int]
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await app.push_screen(CaseResultsScreen("train r1 (support)", rows(40)))
        await pilot.pause()
        assert isinstance(app.screen, CaseResultsScreen)
        listing = app.screen.query_one(MarkedOptionList)
        assert f"{CURSOR_MARK}fail→pass  case_00" in screen_text(app)
        await press_and_settle(pilot, "G")
        assert listing.highlighted == 39 and f"{CURSOR_MARK}fail→pass  case_39" in screen_text(app)
        assert f"{CURSOR_MARK}fail→pass  case_00" not in screen_text(app)
        await press_and_settle(pilot, "g")
        assert listing.highlighted == 0
