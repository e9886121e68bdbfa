"""History and reverts as a person meets them: the cursor after a revert, the mark on a reverted
record and the row that names what a revert reverted, a second revert refused before anything is
asked, undoing a revert, the conflict dialog that names the later records, empty states, q/esc."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from app_support import (
    PLAN_ID,
    MakeApp,
    notifications,
    park_demo_plan,
    press_and_settle,
    screen_text,
    widget_text,
)
from textual.app import App
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static
from workspace_support import experience_uri, plans_of

from ovtui.app.screens.confirm import ConfirmModal
from ovtui.app.screens.history import NO_HISTORY, HistoryScreen
from ovtui.app.views.history import when
from ovtui.app.widgets.field_diff import FieldDiff
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.train.review.plans import ItemDecision
from ovtui.wiring.workspace import Workspace

LATER_PLAN = "plan0002later"
LATER_LINE = "- ALWAYS repeat the booking code back"


async def apply_demo_then_a_later_edit(workspace: Workspace) -> tuple[str, str]:
    """Two applies that both change reservation_cancellation: (the earlier record, the later one)."""
    park_demo_plan(workspace)
    workspace.review.decide_all(PLAN_ID, "approved")
    await workspace.review.apply_pending(PLAN_ID)
    current = workspace.reading.memory(experience_uri("reservation_cancellation"))
    assert current is not None
    item = PolicyPlanItem(
        kind="upsert",
        target_name="reservation_cancellation",
        target_uri=experience_uri("reservation_cancellation"),
        before_content=current.content,
        after_content=f"{current.content}\n{LATER_LINE}",
        base_version=current.version,
    )
    plan = PolicyUpdatePlan(items=[item], metadata={"plan_id": LATER_PLAN})
    plans_of(workspace).park(plan, [ItemDecision(item=0, decision="approved")])
    await workspace.review.apply_pending(LATER_PLAN)
    later, earlier = (entry.id for entry in workspace.reading.history())
    return earlier, later


class Shown:
    """A ``message_hook`` that wakes the test when History has shown a record (its detail follows the
    cursor a moment after a key, so a test waits for it instead of sleeping)."""

    def __init__(self) -> None:
        self.messages: list[object] = []
        self.shown = asyncio.Event()

    def __call__(self, message: object) -> None:
        self.messages.append(message)
        if isinstance(message, HistoryScreen.Opened):
            self.shown.set()

    async def record(self, pilot: Pilot[None], record_id: str) -> None:
        screen = pilot.app.screen
        assert isinstance(screen, HistoryScreen)
        while screen.record_id != record_id:
            self.shown.clear()
            await asyncio.wait_for(self.shown.wait(), timeout=10)
            await pilot.pause()

    async def header_says(self, pilot: Pilot[None], words: str) -> str:
        """The record's header once it says ``words`` (a refill re-reads the record shown in a
        thread: the header follows a moment after the rows)."""
        header = pilot.app.screen.query_one("#record-header", Static)
        while words not in (text := " ".join(str(header.render()).split())):
            self.shown.clear()
            await asyncio.wait_for(self.shown.wait(), timeout=10)
            await pilot.pause()
        return text


@asynccontextmanager
async def in_history(app: App[None], watch: Shown) -> AsyncIterator[Pilot[None]]:
    """The app running on the History screen, ``watch`` seeing every message it posts."""
    async with app.run_test(size=(120, 40), message_hook=watch) as pilot:
        await press_and_settle(pilot, "3")
        yield pilot


def text_of(app: App[None], widget: Widget) -> str:
    return " ".join(widget_text(app, widget).split())


def cell(table: VimTable, row: int, column: int) -> str:
    return str(table.get_row_at(row)[column])


async def test_after_a_revert_the_cursor_stays_on_the_record_shown_so_the_first_j_moves(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """The revert's record is sorted in above the cursor: the cursor stays on the record shown, and
    the first j goes on to the next one (it once moved onto the record already shown: ignored)."""
    earlier, later = await apply_demo_then_a_later_edit(workspace)
    app, watch = make_app(workspace), Shown()
    async with in_history(app, watch) as pilot:
        screen = app.screen
        assert isinstance(screen, HistoryScreen) and screen.record_id == later
        await press_and_settle(pilot, "ctrl+r")
        await press_and_settle(pilot, "enter")
        table = screen.query_one("#records", VimTable)
        assert table.row_count == 3 and table.selected_key == later == screen.record_id
        await press_and_settle(pilot, "j")
        assert table.selected_key == earlier
        await watch.record(pilot, earlier)
        assert f"history/{earlier}" in str(screen.query_one("#record-header", Static).render())


async def test_a_reverted_record_is_marked_refused_again_up_front_and_its_revert_can_be_undone(
    workspace: Workspace, make_app: MakeApp
) -> None:
    _, later = await apply_demo_then_a_later_edit(workspace)
    app, watch = make_app(workspace), Shown()
    async with in_history(app, watch) as pilot:
        await press_and_settle(pilot, "ctrl+r")
        await press_and_settle(pilot, "enter")
        revert = workspace.reading.history()[0].id
        table = app.screen.query_one("#records", VimTable)
        assert cell(table, 1, 1) == "apply ↶" and cell(table, 1, 3).startswith(f"reverted by {when(revert)}")
        assert cell(table, 0, 1) == "revert" and cell(table, 0, 3) == f"reverts {when(later)}"
        assert f"↶ REVERTED by history/{revert}" in await watch.header_says(pilot, "REVERTED")

        await press_and_settle(pilot, "ctrl+r")  # the same record again: refused, nothing asked
        assert not isinstance(app.screen, ConfirmModal)
        said = notifications(watch.messages)
        assert any(n.startswith(f"record {later} is already reverted by history/{revert}") for n in said)

        await press_and_settle(pilot, "k")  # the revert's own header names what it reverted
        await watch.record(pilot, revert)
        header = " ".join(str(app.screen.query_one("#record-header", Static).render()).split())
        assert f"reverts history/{later} (the apply of plan {LATER_PLAN} at {when(later)})" in header

        await press_and_settle(pilot, "z")  # undo the revert
        assert isinstance(app.screen, ConfirmModal) and app.screen.title_text == "Undo this revert?"
        await press_and_settle(pilot, "enter")
        restored = workspace.reading.memory(experience_uri("reservation_cancellation"))
        assert restored is not None and LATER_LINE in restored.content
        assert [e.kind for e in workspace.reading.history()] == ["revert", "revert", "apply", "apply"]
        assert cell(table, 2, 1) == "apply"  # no longer reverted: its mark is gone


async def test_the_revert_conflict_dialog_names_the_later_records_to_revert_first(
    workspace: Workspace, make_app: MakeApp
) -> None:
    earlier, later = await apply_demo_then_a_later_edit(workspace)
    app, watch = make_app(workspace), Shown()
    async with in_history(app, watch) as pilot:
        await press_and_settle(pilot, "j")  # the earlier record
        await watch.record(pilot, earlier)
        await press_and_settle(pilot, "ctrl+r")
        await press_and_settle(pilot, "enter")
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal) and dialog.title_text == "Revert conflict"
        assert "Later records changed them; revert these first, newest first:" in dialog.body
        assert f"history/{later} (the apply of plan {LATER_PLAN} at {when(later)})" in dialog.body
        await press_and_settle(pilot, "escape")
    assert [e.kind for e in workspace.reading.history()] == ["apply", "apply"]


async def test_empty_history_says_how_records_get_here_and_a_filter_that_keeps_none_says_so(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "3")
        diff = app.screen.query_one(FieldDiff)
        assert text_of(app, diff) == NO_HISTORY
        workspace.review.decide_all(PLAN_ID, "approved")
        await workspace.review.apply_pending(PLAN_ID)
        await press_and_settle(pilot, "slash", *"no-such-text")
        assert text_of(app, diff) == "no record matches the filter 'no-such-text': / edits it"


async def test_escape_goes_back_to_the_records_and_q_quits_from_there(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    workspace.review.decide_all(PLAN_ID, "approved")
    await workspace.review.apply_pending(PLAN_ID)
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "3")
        records = app.screen.query_one("#records", VimTable)
        assert "apply" in screen_text(app) and "+1~3−1" in screen_text(app)  # kind and counts at 80
        await press_and_settle(pilot, "l", "escape")
        assert records.has_focus
        await press_and_settle(pilot, "slash", "q", "escape")  # q is text in the filter; escape leaves it
        assert records.has_focus and app.return_code is None
        await press_and_settle(pilot, "q")
        assert app.return_code == 0
