"""A dialog's enter does what its hint says: the hint follows the focus, ←/→ move between the
buttons, and the focused one is marked with ``▶`` (seen without colour)."""

from __future__ import annotations

import pytest
from app_support import PLAN_ID, MakeApp, park_demo_plan, press_and_settle, screen_text
from textual.widgets import Button, Input, Label

from ovtui.app.app import OvtuiApp
from ovtui.app.screens.confirm import FOCUS_MARK, ConfirmModal, NoteModal
from ovtui.wiring.workspace import Workspace

SIZES = [(80, 24), (120, 40)]


def hint(app: OvtuiApp) -> str:
    return str(app.screen.query_one("#dialog-keys", Label).render())


def marked(app: OvtuiApp) -> list[str]:
    return [str(b.label) for b in app.screen.query(Button) if str(b.label).startswith(FOCUS_MARK)]


def plan_ids(workspace: Workspace) -> list[str]:
    return [p.plan_id for p in workspace.review.pending_plans()]


@pytest.mark.parametrize("size", SIZES)
async def test_discard_s_enter_follows_the_focus_and_its_hint(
    workspace: Workspace, make_app: MakeApp, size: tuple[int, int]
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await press_and_settle(pilot, "2", "X")
        assert isinstance(app.screen, ConfirmModal)
        assert hint(app).startswith("enter: Cancel") and marked(app) == [f"{FOCUS_MARK}Cancel"]
        assert f"{FOCUS_MARK}Cancel" in screen_text(app)  # the mark is drawn, not only set
        await press_and_settle(pilot, "shift+tab")
        assert hint(app).startswith("enter: Discard") and marked(app) == [f"{FOCUS_MARK}Discard"]
        await press_and_settle(pilot, "right")  # round to Cancel again
        assert hint(app).startswith("enter: Cancel")
        await press_and_settle(pilot, "enter")
        assert not isinstance(app.screen, ConfirmModal) and plan_ids(workspace) == [PLAN_ID]
        await press_and_settle(pilot, "X", "left")
        assert hint(app).startswith("enter: Discard")
        await press_and_settle(pilot, "enter")  # what the hint said: the plan is discarded
        assert plan_ids(workspace) == []


@pytest.mark.parametrize("size", SIZES)
async def test_the_note_dialog_names_the_button_enter_presses(
    workspace: Workspace, make_app: MakeApp, size: tuple[int, int]
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await press_and_settle(pilot, "2", "n")
        assert isinstance(app.screen, NoteModal) and isinstance(app.screen.focused, Input)
        assert hint(app).startswith("enter: Save note") and marked(app) == []
        await press_and_settle(pilot, "tab", "right")  # Save note, then Approve
        assert hint(app).startswith("enter: Approve") and marked(app) == [f"{FOCUS_MARK}Approve"]
        await press_and_settle(pilot, "enter")
        decision = workspace.review.pending_plan(PLAN_ID).decisions[0].decision
        assert decision == "approved"


@pytest.mark.parametrize("size", SIZES)
async def test_applying_an_all_rejected_plan_promises_no_record(
    workspace: Workspace, make_app: MakeApp, size: tuple[int, int]
) -> None:
    park_demo_plan(workspace)
    workspace.review.decide_items(PLAN_ID, None, "rejected")
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await press_and_settle(pilot, "2", "p")
        assert isinstance(app.screen, ConfirmModal)
        body = app.screen.body
        assert body.startswith("Writes nothing and no History record") and "one History record" not in body
        await press_and_settle(pilot, "enter")  # Apply is the default: nothing is written
    assert workspace.reading.history() == []
