"""The app in real terminals (issue #7): the 80×24 floor, too small, diff keys, dry run, dialog defaults."""

from __future__ import annotations

from app_support import (
    PLAN_ID,
    MakeApp,
    edit_experience,
    park_demo_plan,
    press_and_settle,
    screen_text,
    settle,
)
from textual.widgets import Button

from ovtui.app.keys import catalog
from ovtui.app.registry import binding_sources
from ovtui.app.screens.confirm import ConfirmModal, NoteModal
from ovtui.app.screens.too_small import TooSmallScreen
from ovtui.app.widgets.field_diff import FieldDiff
from ovtui.wiring.workspace import Workspace


async def test_at_80x24_the_essential_controls_of_every_screen_are_on_screen(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        run = screen_text(app)
        for words in ("Train (t)", "Stream (s)", "Cancel (c)", "Dry run", "1 Run", "4 Memories"):
            assert words in run
        await press_and_settle(pilot, "2")
        review = screen_text(app)
        for words in ("a Approve", "r Reject", "p Apply", "Apply plan (p)", "stale", "Dry run"):
            assert words in review
        await press_and_settle(pilot, "3")
        assert "^r Revert" in screen_text(app) or "/ Filter" in screen_text(app)
        await pilot.press("4")
        await settle(app, pilot)
        memories = screen_text(app)
        assert "experiences" in memories and "t Type" in memories  # the type filter and its key


async def test_below_the_floor_the_app_says_the_terminal_is_too_small(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(70, 20)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, TooSmallScreen)
        assert "70×20" in screen_text(app) and "at least 80×24" in screen_text(app)
        await press_and_settle(pilot, "question_mark", "2", "D")  # nothing opens beneath or above it
        assert isinstance(app.screen, TooSmallScreen) and app.current_mode == "run" and not app.dry_run
        await pilot.resize_terminal(100, 30)
        await settle(app, pilot)
        assert not isinstance(app.screen, TooSmallScreen)


async def test_at_130x36_the_stale_mark_of_an_item_is_visible(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    edit_experience(workspace.root, "reservation_cancellation", "## Situation\n- edited by hand", 9)
    assert workspace.review.refresh_stale()
    app = make_app(workspace)
    async with app.run_test(size=(130, 36)) as pilot:
        await press_and_settle(pilot, "2")
        lines = screen_text(app).splitlines()
        # STALE leads the change cell, before the target: it shows however long the name is
        [first_item] = [line for line in lines if "~ reservation_cancel" in line]
        assert "STALE ~ reservation_cancel" in first_item


async def test_the_diff_pane_scrolls_by_keyboard_and_the_help_says_how(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "2")
        diff = app.screen.query_one(FieldDiff)
        await pilot.press("l")
        await pilot.pause()
        assert app.focused is diff and diff.max_scroll_y > 0
        await pilot.press("j")
        await pilot.pause()
        assert diff.scroll_y == 1
        await pilot.press("end")
        await pilot.pause()
        assert diff.scroll_y == diff.max_scroll_y
        await pilot.press("pageup")
        await pilot.pause()
        assert diff.scroll_y < diff.max_scroll_y
        await pilot.press("home")
        await pilot.pause()
        assert diff.scroll_y == 0
        await pilot.press("h")
        await pilot.pause()
        assert app.focused is app.screen.query_one("#items")
        help_rows = {(i.context, i.id) for i in catalog(app, binding_sources(type(app)), app.keymap)}
        assert {("Diff", "diff.page_down"), ("Diff", "diff.top"), ("Review", "review.diff")} <= help_rows


async def test_dry_run_is_shown_in_words_on_the_top_bar_and_the_apply_button(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await press_and_settle(pilot, "2")
        assert str(app.screen.query_one("#apply", Button).label) == "Apply plan (p)"
        await press_and_settle(pilot, "D")
        assert "DRY RUN" in screen_text(app).splitlines()[0]
        assert str(app.screen.query_one("#apply", Button).label) == "Apply plan — DRY RUN (p)"


async def test_enter_in_the_note_dialog_saves_the_note_and_does_not_approve(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await press_and_settle(pilot, "2")
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, NoteModal)
        assert "enter: Save note" in screen_text(app)  # the default is shown
        await press_and_settle(pilot, *"check the fare rules", "enter")
        decision = workspace.review.pending_plan(PLAN_ID).decisions[0]
        assert (decision.decision, decision.note) == ("pending", "check the fare rules")


async def test_the_revert_dialog_focuses_revert_and_says_so(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    workspace.review.decide_all(PLAN_ID, "rejected")
    workspace.review.decide(PLAN_ID, 1, "approved")
    await workspace.review.apply_pending(PLAN_ID)
    app = make_app(workspace)
    async with app.run_test(size=(100, 30)) as pilot:
        await press_and_settle(pilot, "3")
        await pilot.press("ctrl+r")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal) and dialog.focused is dialog.query_one("#confirm")
        assert "enter: Revert" in screen_text(app)
        await press_and_settle(pilot, "enter")
    assert not (workspace.root / "memories" / "experiences" / "baggage_allowance.md").exists()


async def test_the_help_title_is_read_whole_at_the_floor(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "question_mark")
        text = " ".join(line.strip(" █") for line in screen_text(app).splitlines())
        assert "ctrl+p lists them as commands" in " ".join(text.split())  # was cut after "remap any id u"


async def test_every_tab_keeps_its_name_at_the_floor(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "2")
        top = screen_text(app).splitlines()[0]
        assert "5 Sessions" in top and "2 Review (1)" in top and "Dry run" in top  # "Sessions" wrapped away
        await pilot.resize_terminal(130, 36)
        await settle(app, pilot)
        assert "offline" in screen_text(app).splitlines()[0]  # wide enough again: the backend shows
