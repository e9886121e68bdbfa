"""What the agent would not act on, in the app: lines the sample agent cannot use are flagged on the
Memories screen and in Review, next to what a plan will do on validation cases, its evidence and
any leaked case values."""

from __future__ import annotations

import asyncio

from app_support import MakeApp, edit_experience, screen_text, settle
from textual.message import Message
from workspace_support import experience_uri, plans_of

from ovtui.app.screens.memories import MemoriesScreen
from ovtui.app.views.review import item_header
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.train.review.plans import ItemDecision, PendingPlan
from ovtui.wiring.workspace import Workspace


def test_review_shows_validation_leaks_evidence_and_unread_lines() -> None:
    flips = {
        "before": 1,
        "after": 2,
        "cases": 3,
        "gained": ["case_a"],
        "lost": [],
        "flipped": {"case_a": {"before": "failed: x", "after": "passed: get_reservation → refund_payment"}},
    }
    item = PolicyPlanItem(
        kind="upsert",
        target_name="refund_request",
        after_content="## Approach\n- Be warm.",
        metadata={
            "validation": flips,
            "leaks": ["K4P7Q2"],
            "evidence": ["t1"],
            "counter_evidence": ["t2", "t3"],
            "unread_lines": ["line 2 is not understood by the sample agent: - Be warm."],
        },
    )
    plan = PolicyUpdatePlan(
        items=[item], metadata={"validation": {**flips, "after": 3, "gained": ["a", "b"]}}
    )
    pending = PendingPlan(plan_id="p", plan=plan, decisions=[ItemDecision(item=0)])
    text = item_header(pending, 0, item, lambda uri: uri or "").plain
    lines = text.splitlines()
    assert (
        lines[2] == "validation 1/3 → 2/3, flips +1 −0 · plan 1/3 → 3/3 · evidence 1, might break 2 passing"
    )
    assert lines[3] == "flips: +case_a passed: get_reservation → refund_payment"
    assert lines[4] == (
        "LEAK: K4P7Q2 (never approved automatically) · "
        "⚠ line 2 is not understood by the sample agent: - Be warm."
    )


async def test_the_memories_screen_flags_lines_the_agent_cannot_use(
    workspace: Workspace, make_app: MakeApp
) -> None:
    edit_experience(
        workspace.root,
        "aaa_refund_help",
        "## Situation\n- A customer wants money back.\n"
        "## Approach\n- Open the reservation first.\n- Be warm.",
        1,
    )
    app = make_app(workspace)
    reader_built = asyncio.Event()

    def hook(message: Message) -> None:
        if isinstance(message, MemoriesScreen.ReaderBuilt):
            reader_built.set()

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        table = app.screen.query_one("#memories", VimTable)
        table.move_cursor(row=table.get_row_index(experience_uri("aaa_refund_help")))  # rows are keyed by URI
        await settle(app, pilot)
        # The file shows at once; the agent's reader is built once the list is still, then its notes.
        assert "Be warm." in screen_text(app)
        await asyncio.wait_for(reader_built.wait(), timeout=10)
        await settle(app, pilot)
        text = screen_text(app)
        assert "⚠ line 5 is not understood by the sample agent:" in text
        assert "line 4 is not understood" not in text


async def test_the_review_diff_flags_lines_the_agent_cannot_use(
    workspace: Workspace, make_app: MakeApp
) -> None:
    item = PolicyPlanItem(
        kind="upsert",
        target_name="refund_help",
        after_content="## Situation\n- money back\n## Approach\n- Open the reservation first.\n- Be warm.",
    )
    plan = PolicyUpdatePlan(items=[item], metadata={"plan_id": "plan-unread"})
    plans_of(workspace).park(plan, [ItemDecision(item=0)])
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")
        await settle(app, pilot)
        assert "⚠ line 5 is not understood by the sample agent: - Be warm." in screen_text(app)


async def test_evidence_lists_the_passing_trajectories_an_item_might_break(
    workspace: Workspace, make_app: MakeApp
) -> None:
    trajectory = "viking://user/default/memories/trajectories/{}.md"
    item = PolicyPlanItem(
        kind="upsert",
        target_name="refund_status",
        after_content="## Approach\n- Open the reservation first.",
        evidence_trajectory_uris=[trajectory.format("refund_lookup_20261129120500")],
        metadata={"counter_evidence": [trajectory.format("cancel_reservation_20261129120000")]},
    )
    plans_of(workspace).park(
        PolicyUpdatePlan(items=[item], metadata={"plan_id": "plan-counter"}), [ItemDecision(item=0)]
    )
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")
        await settle(app, pilot)
        await pilot.press("o")
        await settle(app, pilot)
        text = screen_text(app)
        assert "1 trajectory file(s), and 1 passing one(s) the change might break" in text
        assert "(passing: might break)" in text, text


def test_a_long_list_of_unread_lines_is_cut_to_a_few_and_counted() -> None:
    """The header has a few fixed rows: wrapping 2,000 notes into it cost 0.3 s per shown item."""
    notes = [f"line {n} is not understood by the sample agent: - step {n}" for n in range(2, 2002)]
    item = PolicyPlanItem(kind="upsert", target_name="long", metadata={"unread_lines": notes})
    pending = PendingPlan(plan_id="p", plan=PolicyUpdatePlan(items=[item]), decisions=[ItemDecision(item=0)])
    text = item_header(pending, 0, item, lambda uri: uri or "").plain
    assert "⚠ line 2 is not understood" in text and "⚠ line 4 is not understood" in text
    assert "line 5 is not understood" not in text
    assert "⚠ 1997 more such lines (all: ovtui check)" in text
