"""History (filter, conflict and force on revert) and Memories (list, type filter, Markdown view, refresh)."""

from __future__ import annotations

from typing import get_args

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
from textual.widgets import Button, Input

from ovtui.app.screens.confirm import ConfirmModal
from ovtui.app.screens.history import FILTER_HELP
from ovtui.app.views.history import HistoryFilter
from ovtui.app.widgets.vim_table import VimTable
from ovtui.memory.record_kinds import RecordKind
from ovtui.wiring.workspace import Workspace


async def apply_demo_plan(workspace: Workspace, *, dry_run: bool = False) -> None:
    park_demo_plan(workspace)
    workspace.review.decide_all(PLAN_ID, "approved")
    await workspace.review.apply_pending(PLAN_ID, dry_run=dry_run)


def test_filter_syntax() -> None:
    assert HistoryFilter.parse("kind:apply uri:refund cancel words") == HistoryFilter(
        "apply", "refund", "cancel words"
    )
    assert HistoryFilter.parse("") == HistoryFilter()


async def test_history_filters_by_kind_and_text(workspace: Workspace, make_app: MakeApp) -> None:
    await apply_demo_plan(workspace, dry_run=True)
    await apply_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "3")
        table = app.screen.query_one("#records", VimTable)
        assert table.row_count == 2
        await press_and_settle(pilot, "slash", *"kind:dry_run")
        assert table.row_count == 1
        assert "dry_run" in screen_text(app)
        app.screen.query_one("#history-filter", Input).value = "baggage_allowance"
        await settle(app, pilot)
        assert table.row_count == 2  # both records added that file
        app.screen.query_one("#history-filter", Input).value = "no-such-text"
        await settle(app, pilot)
        assert table.row_count == 0


async def test_a_record_the_filter_hides_is_neither_shown_nor_revertable(
    workspace: Workspace, make_app: MakeApp
) -> None:
    await apply_demo_plan(workspace)
    [record] = workspace.reading.history()
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "3")
        assert record.id in screen_text(app)
        await press_and_settle(pilot, "slash", *"kind:revert", "enter")
        assert app.screen.query_one("#records", VimTable).row_count == 0
        assert record.id not in screen_text(app)  # its diff stayed beside an empty list
        await press_and_settle(pilot, "ctrl+r")
        assert not isinstance(app.screen, ConfirmModal)  # ctrl+r offered to revert the hidden record


async def test_revert_conflict_offers_force(workspace: Workspace, make_app: MakeApp) -> None:
    await apply_demo_plan(workspace)
    root = workspace.root
    edit_experience(root, "reservation_cancellation", "## Situation\n- someone edited this by hand", 9)
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "3")
        await pilot.press("ctrl+r")
        await pilot.pause()
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        assert app.screen.title_text == "Revert conflict"
        assert "reservation_cancellation.md" in app.screen.body
        await pilot.click("#confirm")  # force
        await settle(app, pilot)
    assert any("forced over later changes" in n for n in notifications(messages))
    text = (root / "memories" / "experiences" / "reservation_cancellation.md").read_text()
    assert "edited this by hand" not in text and "Look the reservation up first" in text
    assert [e.kind for e in workspace.reading.history()] == ["revert", "apply"]


async def test_experiences_table_and_markdown_view(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        table = app.screen.query_one("#memories", VimTable)
        assert table.row_count == 3
        text = screen_text(app)
        assert "experiences: 3 files" in text and "2026-09-21" in text
        await pilot.press("G")
        await pilot.pause()
        assert "reservation_cancellation · production · version 2" in screen_text(app)
        edit_experience(workspace.root, "brand_new", "## Situation\n- new", 1)
        await press_and_settle(pilot, "ctrl+l")
        assert table.row_count == 4


def test_the_filter_hint_names_every_record_kind_and_fits_80_columns() -> None:
    # session commits are records too: a hint without them hid that kind:session_commit filters
    assert all(f"{kind}" in FILTER_HELP for kind in get_args(RecordKind))
    assert len(FILTER_HELP) < 78


async def test_placeholders_in_markdown_views_are_shown_not_dropped_as_html(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """Placeholders like `<id>` show as text, never dropped as HTML (`reservation  to `)."""
    edit_experience(workspace.root, "aaa_placeholders", "## Approach\n- move reservation <id> to <date>", 1)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        assert "move reservation <id> to <date>" in screen_text(app)


async def test_the_revert_conflict_dialog_offers_force_in_app_words(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """The revert conflict dialog offers Force revert in the app's words (not the CLI's "use --force"),
    names the changed file and leaves Cancel focused."""
    park_demo_plan(workspace)
    workspace.review.decide_all(PLAN_ID, "approved")
    await workspace.review.apply_pending(PLAN_ID)
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
        # (the dialog pads its buttons alike and marks the focused one with ▶)
        assert str(dialog.query_one("#confirm", Button).label).strip(" ▶") == "Force revert"
        assert dialog.focused is dialog.query_one("#cancel")  # overwriting later edits is not the default
    assert [e.kind for e in workspace.reading.history()] == ["apply"]
