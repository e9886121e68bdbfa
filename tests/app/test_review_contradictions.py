"""Review shows a rule that contradicts another experience's with both lines side by side; the plan
is not applied until the reviewer chooses which stands, and the choice is theirs, not the gate's."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from app_support import (
    PLAN_ID,
    MakeApp,
    edited_in_review,
    park_undecided,
    press_and_settle,
    screen_text,
    settle,
)
from textual.app import App
from textual.pilot import Pilot

from ovtui.app.screens.stands import StandsModal
from ovtui.app.views.review import contradictions_text
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.train.review.gates.contradictions import CONTRADICTIONS, mark_contradictions
from ovtui.wiring.workspace import Workspace

PLAN = "plan0000contra"
RULE = "- ALWAYS cancel before explicit confirmation"


async def contradicting_plan(workspace: Workspace) -> None:
    item = PolicyPlanItem(
        kind="upsert",
        target_name="quick_cancellations",
        after_content=(
            f"## Situation\n- Customer asks to cancel a booking\n- They are in a hurry\n## Reflect\n{RULE}"
        ),
    )
    plan = PolicyUpdatePlan(items=[item], metadata={"plan_id": PLAN})
    assert mark_contradictions(plan, await asyncio.to_thread(workspace.reading.experiences)) == 1
    park_undecided(workspace, plan)


@asynccontextmanager
async def reviewing(workspace: Workspace, make_app: MakeApp) -> AsyncIterator[tuple[App[Any], Pilot[Any]]]:
    """The Review screen open on the contradicting plan."""
    await contradicting_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(180, 50)) as pilot:
        await press_and_settle(pilot, "2")
        yield app, pilot


async def test_both_lines_side_by_side_and_no_apply_until_the_reviewer_chooses(
    workspace: Workspace, make_app: MakeApp
) -> None:
    async with reviewing(workspace, make_app) as (app, _):
        text = screen_text(app)
        assert "CONTRADICTS #0" in text and "reservation_cancellation: - NEVER" in text
        shown = workspace.review.pending_plan(PLAN).plan.items[0]
        mine, theirs = contradictions_text(shown).plain.split("║")  # one row: this line ║ the other
        assert (
            RULE in mine and "reservation_cancellation: - NEVER cancel before explicit confirmation" in theirs
        )
        assert "(choose which stands)" in theirs

    workspace.review.decide(PLAN, 0, "approved")
    with pytest.raises(OvtuiError, match="choose which line stands"):
        await workspace.review.apply_pending(PLAN)
    chosen = await asyncio.to_thread(workspace.review.choose_standing, PLAN, 0, 0, "other")
    assert chosen.plan.items[0].metadata[CONTRADICTIONS][0]["stands"] == "other"
    assert RULE not in str(chosen.plan.items[0].after_content)
    result = await workspace.review.apply_pending(PLAN)
    assert result.written_uris


async def test_the_reviewer_chooses_with_a_key_and_the_line_they_keep_is_what_applies(
    workspace: Workspace, make_app: MakeApp
) -> None:
    async with reviewing(workspace, make_app) as (app, pilot):
        await press_and_settle(pilot, "w")
        dialog = app.screen
        assert isinstance(dialog, StandsModal) and dialog.finding["other"] == "reservation_cancellation"
        await pilot.click("#this")
        await settle(app, pilot)
        assert "(this stands)" in screen_text(app)
        await press_and_settle(pilot, "a")
    kept = workspace.review.pending_plan(PLAN).plan.items[0]
    assert kept.metadata[CONTRADICTIONS][0]["stands"] == "this" and RULE in str(kept.after_content)
    assert workspace.review.pending_plan(PLAN).decisions[0].decision == "approved"
    result = await workspace.review.apply_pending(PLAN)
    assert result.written_uris


async def test_an_approved_edit_that_now_contradicts_goes_back_to_undecided_with_both_lines_shown(
    workspace: Workspace, make_app: MakeApp
) -> None:
    added = "\n- ALWAYS cancel before the customer confirms explicitly"
    before, text = await edited_in_review(workspace, make_app, added)
    assert "CONTRADICTS" not in before
    assert "CONTRADICTS #0" in text and "(choose which stands)" in text
    shown = workspace.review.pending_plan(PLAN_ID).plan.items[0]
    pairs = [row.split("║") for row in contradictions_text(shown).plain.strip().split("\n")]
    assert any(
        "ALWAYS cancel before the customer confirms" in mine
        and "reservation_cancellation: - NEVER cancel before the customer confirms" in theirs
        for mine, theirs in pairs
    )
    decision = workspace.review.pending_plan(PLAN_ID).decisions[0]
    # Undecided again: the edit took its approval back (signed review: an approval is for the text it
    # saw), and the contradiction holds it until a person chooses which line stands.
    assert decision.decision == "pending" and "approve it again" in decision.note
    with pytest.raises(OvtuiError, match="undecided"):
        await workspace.review.apply_pending(PLAN_ID)
