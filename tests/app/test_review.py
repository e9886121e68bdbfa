"""Review: decisions, notes, delete confirmation, the editor seam, evidence, dry-run and real apply."""

from __future__ import annotations

import asyncio
from typing import Any

from app_support import (
    PLAN_ID,
    MakeApp,
    edit_experience,
    notifications,
    park_demo_plan,
    press_and_settle,
    screen_text,
    settle,
    wait_group,
)
from filelock import FileLock
from plan_support import park_peer_preference
from textual import events
from textual.app import App
from textual.widgets import Static
from workspace_support import history_of, plans_of

from ovtui.app.screens.confirm import ConfirmModal, NoteModal
from ovtui.app.screens.evidence import EvidenceScreen
from ovtui.app.screens.history import HistoryScreen
from ovtui.app.screens.review import ReviewScreen
from ovtui.app.widgets.field_diff import FieldDiff
from ovtui.app.widgets.vim_table import VimTable
from ovtui.storage.paths import PENDING_FOLDER
from ovtui.train.review.pending import LOCKS_FOLDER
from ovtui.wiring.workspace import Workspace


def decisions(workspace: object) -> list[tuple[str, str]]:
    pending = workspace.review.pending_plan(PLAN_ID)  # type: ignore[attr-defined]
    return [(d.decision, d.note) for d in pending.decisions]


def decision_marks(app: App[Any]) -> list[str]:
    """The decision column of the items as shown (a mark that reads without colour)."""
    table = app.screen.query_one("#items", VimTable)
    return [str(table.get_row_at(row)[1]) for row in range(table.row_count)]


async def test_review_shows_the_queue_and_a_side_by_side_diff(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        assert isinstance(app.screen, ReviewScreen)
        assert app.screen.query_one("#items", VimTable).row_count == 3
        text = screen_text(app)
        assert "plan0000demo" in text and "DELETE" in text
        assert "│" in text and "IF refundable" in text  # two columns, the added line on the right
        assert not app.screen.query_one(FieldDiff).is_unified


async def test_approve_reject_with_note_and_confirm_a_delete(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        await pilot.press("a")  # item 0 approved, the cursor moves on to item 1
        await pilot.press("n")
        await pilot.pause()
        assert isinstance(app.screen, NoteModal)
        await pilot.press(*"no evidence")
        await pilot.click("#rejected")
        await pilot.pause()
        await pilot.press("j", "a")  # item 2 is a delete: approving it asks first
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert decisions(workspace) == [("approved", ""), ("rejected", "no evidence"), ("approved", "")]
        assert decision_marks(app) == ["✓", "✗", "✓"]


async def test_decisions_wait_for_the_plans_lock_in_a_worker_while_the_keys_keep_working(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """Another writer (a run, the CLI) holds the plan's file lock: each decision waits for it in a
    worker, never on the UI loop, so the keys are still handled meanwhile; once the lock is free the
    decisions land, in the order they were asked for."""
    park_demo_plan(workspace)
    path = workspace.root / PENDING_FOLDER / LOCKS_FOLDER / f"{PLAN_ID}.lock"
    other_writer = FileLock(str(path), thread_local=False, is_singleton=False)
    on_last_item = asyncio.Event()

    def hook(message: object) -> None:
        if not isinstance(message, VimTable.RowHighlighted):
            return
        if message.table.id == "items" and message.cursor_row == 2:
            on_last_item.set()

    app = make_app(workspace)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await press_and_settle(pilot, "2")
        other_writer.acquire()
        try:
            # Item 0 approved, item 1 rejected, typed in one batch: both wait for the lock, and the
            # cursor goes on at once, so the second key acts on the next item.
            for key in ("a", "r"):
                app.post_message(events.Key(key, key))
            await asyncio.wait_for(on_last_item.wait(), 10)
            assert [d for d, _ in decisions(workspace)] == ["pending"] * 3
        finally:
            other_writer.release()
        await wait_group(app, pilot, "review-record")
        assert [d for d, _ in decisions(workspace)] == ["approved", "rejected", "pending"]
        assert decision_marks(app) == ["✓", "✗", "?"]


async def test_cancelling_the_delete_confirmation_decides_nothing(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        await pilot.press("A")  # approve all includes the delete
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await press_and_settle(pilot, "escape")
        assert [d for d, _ in decisions(workspace)] == ["pending"] * 3


async def test_edit_after_content_through_the_editor_seam(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    seen: list[str] = []

    def fake_editor(text: str) -> str:
        seen.append(text)
        return text + "\n- ALWAYS repeat the booking code"

    app = make_app(workspace, editor=fake_editor)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        await press_and_settle(pilot, "e")
        item = workspace.review.pending_plan(PLAN_ID).plan.items[0]
        assert "IF refundable" in seen[0]
        assert str(item.after_content).endswith("ALWAYS repeat the booking code")
        assert item.metadata["edited_by_reviewer"] is True
        assert "(edited by" in screen_text(app)


async def test_evidence_opens_the_trajectory_and_escape_comes_back(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        await press_and_settle(pilot, "o")
        assert isinstance(app.screen, EvidenceScreen)
        assert "lookup" in screen_text(app)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)


async def test_narrow_terminal_and_the_key_give_a_unified_diff(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        diff = app.screen.query_one(FieldDiff)
        await pilot.press("u")
        await pilot.pause()
        assert diff.is_unified
        await pilot.press("u")
        await pilot.resize_terminal(90, 40)
        await pilot.pause()
        assert diff.is_unified and not diff.unified  # narrow: unified without the key
        assert "+ - IF refundable" in screen_text(app)


async def test_apply_refuses_while_items_are_undecided(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "2")
        await press_and_settle(pilot, "p")
    assert any("still undecided" in n for n in notifications(messages))
    assert not history_of(workspace).ids_on_disk()


async def test_dry_run_apply_then_real_apply_then_history_then_revert(
    workspace: Workspace, make_app: MakeApp
) -> None:
    root = workspace.root
    experiences = root / "memories" / "experiences"
    before = {p.name: p.read_text() for p in experiences.glob("*.md")}
    park_demo_plan(workspace)
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "2")
        await pilot.press("a", "r", "a")  # approve the edit, reject the new one, approve the delete…
        await pilot.pause()
        await pilot.click("#confirm")  # …after confirming it
        await settle(app, pilot)

        await press_and_settle(pilot, "p")  # asks first, saying what will be written…
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal) and dialog.title_text == f"Apply plan {PLAN_ID}?"
        assert dialog.body.splitlines()[:3] == [
            "Writes 2 memory file(s): 0 added, 1 updated, 1 deleted; and one History record "
            "(revert it there).",
            "  ~ memories/experiences/reservation_cancellation.md  (#0)",
            "  − memories/experiences/refund_status.md  (#2)",
        ]
        assert "1 rejected item(s) are not written." in dialog.body
        await press_and_settle(pilot, "escape")  # …and cancelling writes nothing
        assert not history_of(workspace).ids_on_disk()

        await pilot.press("D")  # dry run on: nothing may change
        await press_and_settle(pilot, "p")
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal) and dialog.title_text == f"Dry run of plan {PLAN_ID}?"
        assert dialog.body.startswith("DRY RUN: checks 2 approved item(s) (0 added, 1 updated, 1 deleted)")
        await press_and_settle(pilot, "enter")  # the default: an apply can be reverted
        assert {p.name: p.read_text() for p in experiences.glob("*.md")} == before
        assert any(n.startswith("Dry run of plan") for n in notifications(messages))
        assert [e.kind for e in workspace.reading.history()] == ["dry_run"]

        await pilot.press("D")  # dry run off: the real thing
        await press_and_settle(pilot, "p", "enter")
        assert any(n.startswith("Applied plan") for n in notifications(messages))
        assert "IF refundable" in (experiences / "reservation_cancellation.md").read_text()
        assert not (experiences / "refund_status.md").exists()
        assert not (experiences / "baggage_allowance.md").exists()  # rejected
        assert workspace.review.pending_plans() == []

        await press_and_settle(pilot, "3")
        assert isinstance(app.screen, HistoryScreen)
        assert [e.kind for e in workspace.reading.history()] == ["apply", "dry_run"]
        assert app.screen.query_one("#records", VimTable).row_count == 2
        assert "review: 2 approved, 1 rejected" in screen_text(app)

        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert any(n.startswith("Reverted") for n in notifications(messages))
        assert "IF refundable" not in (experiences / "reservation_cancellation.md").read_text()
        assert (experiences / "refund_status.md").exists()


async def test_approve_all_keeps_a_rejection_and_its_note(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        assert "1 evidence trajectory (o)" in screen_text(app)  # one, not "1 evidence trajectories"
        await pilot.press("j", "j", "n")  # item 2, the delete: rejected with a note
        await pilot.pause()
        await pilot.press(*"keep it")
        await pilot.click("#rejected")
        await pilot.pause()
        await pilot.press("g", "n")  # a note alone on the undecided item 0 survives approve-all too
        await pilot.pause()
        await pilot.press(*"checked")
        await press_and_settle(pilot, "enter")
        await press_and_settle(pilot, "A")  # decides only what is undecided: no delete to confirm
        assert not isinstance(app.screen, ConfirmModal)
        assert decisions(workspace) == [("approved", "checked"), ("approved", ""), ("rejected", "keep it")]


async def test_replan_stale_turns_every_stale_plan_into_one_and_discard_is_in_the_footer(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    from ovtui.wiring.workspace import TrainOptions

    workspace = sample_workspace
    await workspace.runs.train(TrainOptions(epochs=1, eval_split=None, approve="ask"))
    first, *others = workspace.review.pending_plans()
    workspace.review.decide_all(first.plan_id, "approved")
    await workspace.review.apply_pending(first.plan_id)
    workspace.review.refresh_stale()
    stale = [p.plan_id for p in workspace.review.pending_plans() if p.stale]
    assert stale and len(others) == len(workspace.review.pending_plans())
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await pilot.press("2")
        await settle(app, pilot)
        assert "X Discard" in screen_text(app).splitlines()[-1]
        await press_and_settle(pilot, "P")  # asks first: the fresh plan replaces these
        dialog = app.screen
        assert isinstance(dialog, ConfirmModal) and dialog.title_text == "Re-plan the stale plans?"
        assert (
            all(plan_id in dialog.body for plan_id in stale) and "keeps its decision and note" in dialog.body
        )
        await press_and_settle(pilot, "escape")
        assert [p.plan_id for p in workspace.review.pending_plans() if p.stale] == stale  # nothing re-planned
        await press_and_settle(pilot, "P")  # the modal comes once the stale marks are checked
        await press_and_settle(pilot, "enter")
        [said] = [n for n in notifications(messages) if n.startswith("re-planned")]
        fresh = said.split(" as plan ")[1].split()[0]
        waiting = {p.plan_id: p for p in workspace.review.pending_plans()}
        assert set(stale).isdisjoint(waiting) and fresh in waiting and not waiting[fresh].stale
        assert app.screen.query_one("#plans", VimTable).row_count == len(waiting)
        await pilot.press("P")
        await settle(app, pilot)
        assert "no waiting plan has a stale item" in notifications(messages)


async def test_applying_an_all_stale_plan_says_nothing_was_applied(
    workspace: Workspace, make_app: MakeApp
) -> None:
    """Applying a plan whose one approved item is stale says nothing was applied and writes no record
    (it once said "Applied … wrote 0" and wrote an empty one)."""
    park_demo_plan(workspace)
    workspace.review.decide_items(PLAN_ID, [0], "approved")
    workspace.review.decide_items(PLAN_ID, None, "rejected")
    edit_experience(workspace.root, "reservation_cancellation", "## Situation\n- edited by hand", 9)
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await pilot.press("2")
        await settle(app, pilot)
        await press_and_settle(pilot, "p")
        assert "⚠ #0 reservation_cancellation is stale: applying refuses it" in app.screen.body  # type: ignore[attr-defined]
        await press_and_settle(pilot, "enter")
        said = [n for n in notifications(messages) if PLAN_ID in n]
        assert said == [f"Plan {PLAN_ID}: nothing applied: 1 item(s) stale; re-plan it or discard it"]
    assert workspace.reading.history() == []
    assert [p.plan_id for p in workspace.review.pending_plans()] == [PLAN_ID]  # still waiting


async def test_the_empty_review_hint_is_whole_at_80_columns(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "2")
        diff = app.screen.query_one("#diff", FieldDiff)
        lines = [diff.render_line(y) for y in range(diff.size.height)]
        assert diff.size.width < 60  # the narrow pane the hint has to fit
        assert all(line.cell_length <= diff.size.width for line in lines)  # nothing cut at the edge
        shown = " ".join(line.text.strip() for line in lines)
        assert " ".join(shown.split()) == diff.placeholder


async def test_a_new_memory_of_a_session_shows_the_file_it_will_write(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_peer_preference(plans_of(workspace))
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        header = app.screen.query_one("#item-header", Static).render()
        assert "peers/alice/memories/preferences/alice/aisle_seats.md" in str(header)


async def test_a_delete_that_needs_two_reviewers_shows_one_of_two_and_is_not_applied(
    workspace: Workspace, make_app: MakeApp
) -> None:
    config = workspace.config.model_copy(deep=True)
    config.review.reviewer = "ana"
    config.review.second_approver_for = ["delete"]
    ana = Workspace(workspace.root, config)
    park_demo_plan(ana)
    app = make_app(ana)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await press_and_settle(pilot, "2")
        await pilot.press("a", "a", "a")  # item 2 is the delete: approving it asks first
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert "1 of 2 approvals (ana)" in screen_text(app)  # the cursor stays on the last item
        await press_and_settle(pilot, "p")
    assert any("item 2: 1 of 2 approvals (ana)" in n for n in notifications(messages))
    assert not history_of(ana).ids_on_disk()
    pending = ana.review.pending_plan(PLAN_ID)
    assert [(d.decision, d.reviewer, d.approvers) for d in pending.decisions] == [
        ("approved", "ana", ["ana"]),
        ("approved", "ana", ["ana"]),
        ("pending", "ana", ["ana"]),
    ]
