"""Regression tests for the app defects of issue #7, one per defect (each failed before its fix)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager

from app_support import (
    PLAN_ID,
    MakeApp,
    edit_experience,
    notifications,
    park_demo_plan,
    press_and_settle,
    screen_text,
    settle,
)
from textual import events
from textual.widgets import Button, Input, Switch

from ovtui.app.editor import edit_in_editor
from ovtui.app.messages import DryRunToggled, RunFinished
from ovtui.app.screens.confirm import ConfirmModal
from ovtui.app.widgets.top_bar import DRY_RUN_ON, TopBar
from ovtui.memory.history import HistoryStore
from ovtui.wiring.workspace import Workspace


def toggles(messages: list[object]) -> list[bool]:
    """Each DryRunToggled once (the hook sees a bubbling message at every node it passes)."""
    unique = {id(m): m for m in messages if isinstance(m, DryRunToggled)}
    return [m.dry_run for m in unique.values()]


async def test_two_dry_run_toggles_in_one_input_batch_settle_and_keep_the_app_responsive(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """Defect 2: `DD` in one batch made the switch and the app echo each other forever (100% CPU)."""
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
    """Defect 2, the other direction: a click goes up once as a value, and comes back without an echo."""
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


APPEND_A_LINE = ["sh", "-c", 'echo "- ALWAYS repeat the booking code" >> "$1"', "append"]


async def test_a_line_an_editor_appends_lands_on_its_own_line(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """Defect 3: the file for $EDITOR had no final newline, so an appended line glued onto the last one."""
    park_demo_plan(workspace)
    before = workspace.pending.get(PLAN_ID).plan.items[0].after_content

    def editor(text: str) -> str | None:
        return edit_in_editor(text, APPEND_A_LINE)  # a real editor process, no app to suspend

    app = make_app(workspace, editor=editor)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        await press_and_settle(pilot, "e")
    after = workspace.pending.get(PLAN_ID).plan.items[0].after_content
    assert (
        after == str(before) + "\n- ALWAYS repeat the booking code"
    )  # one newline between, none added at the end


def test_an_unchanged_edit_comes_back_exactly_as_it_went() -> None:
    """Defect 3: exactly one newline is stripped, so text that ends in one keeps it."""
    for text in ("no newline", "one newline\n", ""):
        assert edit_in_editor(text, ["true"]) == text


async def test_an_editor_that_cannot_start_is_an_error_and_the_app_resumes(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """A missing $EDITOR raised inside the suspend: the terminal stayed blank and no key worked."""
    park_demo_plan(workspace)
    resumed: list[bool] = []

    @contextmanager
    def suspend_like_textual() -> Iterator[None]:  # App.suspend has no try/finally around its yield
        yield
        resumed.append(True)

    def editor(text: str) -> str | None:
        return edit_in_editor(text, ["/nonexistent/editor", "--wait"], suspend_like_textual)

    app = make_app(workspace, editor=editor)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "2")
        await press_and_settle(pilot, "e")
    assert resumed == [True]
    [said] = [n for n in notifications(messages) if "editor" in n]
    assert "cannot run the editor '/nonexistent/editor --wait' ($VISUAL or $EDITOR)" in said


async def test_placeholders_in_markdown_views_are_shown_not_dropped_as_html(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """Defect 4: `reservation <id> to <date>` rendered as `reservation  to `."""
    edit_experience(workspace.root, "aaa_placeholders", "## Approach\n- move reservation <id> to <date>", 1)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        assert "move reservation <id> to <date>" in screen_text(app)


async def test_a_failed_run_shows_as_failed(workspace: Workspace, make_app: MakeApp) -> None:
    """Defect 11: after `run failed: DatasetError …` the status line said `train: finished`."""
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        app.screen.query_one("#dataset", Input).value = "no_such_dataset"
        await pilot.press("t")
        await app.workers.wait_for_complete()
        await pilot.pause()
        (finished,) = {id(m): m for m in messages if isinstance(m, RunFinished)}.values()
        assert finished.report is None and finished.error
        status = str(app.screen.query_one("#run-status").render())
        assert status.startswith("train: FAILED") and "finished" not in status
        assert app.screen.query_one("#cancel", Button).disabled  # the run is over


async def test_the_revert_conflict_dialog_offers_force_in_app_words(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """Defect 12 (app part): the conflict dialog said "use --force", the CLI's wording."""
    park_demo_plan(workspace)
    workspace.pending.decide_all(PLAN_ID, "approved")
    await workspace.apply_pending(PLAN_ID)
    edit_experience(workspace.root, "reservation_cancellation", "## Situation\n- edited by hand", 9)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "3")
        await pilot.press("ctrl+r")
        await pilot.pause()
        await pilot.press("enter")  # the revert dialog's default is Revert
        await settle(app, pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal) and dialog.title_text == "Revert conflict"
        assert (
            "--force" not in dialog.body and "memories/experiences/reservation_cancellation.md" in dialog.body
        )
        assert str(dialog.query_one("#confirm", Button).label) == "Force revert"
        assert dialog.focused is dialog.query_one("#cancel")  # overwriting later edits is not the default
    assert [e.kind for e in HistoryStore(workspace.paths).list()] == ["apply"]
