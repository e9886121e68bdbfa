"""A non-experience item end to end in the app: Review shows and applies a preference change, the
Memories screen lists it under its type, and History reverts it."""

from __future__ import annotations

import re

import pytest
from app_support import MakeApp, notifications, press_and_settle, screen_text, settle, widget_text
from textual.widgets import Select
from workspace_support import memory_of, plans_of

from ovtui.app.screens.history import HistoryScreen
from ovtui.app.screens.memories import MemoriesScreen
from ovtui.app.screens.review import ReviewScreen
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.train.components.policy_updater import MemoryFilePolicyUpdater
from ovtui.train.review.plans import ItemDecision
from ovtui.wiring.workspace import Workspace

PLAN_ID = "plan0000pref"


def park_preference_plan(workspace: Workspace) -> None:
    plan = PolicyUpdatePlan(
        items=[
            PolicyPlanItem(
                kind="upsert",
                memory_type="preferences",
                target_name="seating",
                after_content="The user always asks for an aisle seat.",
                confidence=0.7,
            )
        ],
        metadata={"plan_id": PLAN_ID},
    )
    plans_of(workspace).park(plan, [ItemDecision(item=0)])


async def test_review_shows_and_applies_a_preference_then_memories_lists_it(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_preference_plan(workspace)
    target = workspace.root / "memories" / "preferences" / "default" / "seating.md"
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        await pilot.press("2")
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
        text = screen_text(app)
        assert "preferences: seating" in text and "aisle seat" in text
        await pilot.press("a")
        await settle(app, pilot)
        await pilot.press("p")  # the confirmation of what will be written: Enter applies
        await settle(app, pilot)
        await pilot.press("enter")
        await settle(app, pilot)
        assert any(n.startswith("Applied plan") for n in notifications(messages))
        assert "aisle seat" in target.read_text(encoding="utf-8")

        await pilot.press("4")
        await settle(app, pilot)
        assert isinstance(app.screen, MemoriesScreen)
        table = app.screen.query_one("#memories", VimTable)
        assert table.row_count == 3 and "experiences: 3 files" in screen_text(app)  # experiences first
        await pilot.press("t")  # cases, entities, events, identity, preferences, …: to preferences
        await pilot.press("t", "t", "t", "t")
        await settle(app, pilot)
        assert app.screen.memory_type == "preferences"
        assert table.row_count == 1
        text = screen_text(app)
        assert "preferences: 1 file" in text and "seating · – · version 1" in text and "aisle seat" in text

        await pilot.press("3")
        await settle(app, pilot)
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("ctrl+r")
        await pilot.pause()
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert any(n.startswith("Reverted") for n in notifications(messages))
    assert not target.exists()


async def test_a_type_without_files_clears_the_view(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        shown = app.screen.query_one("#memories", VimTable).selected_key
        assert shown and "reservation_cancellation" in screen_text(app)
        await pilot.press("t")  # cases: none in this workspace
        await settle(app, pilot)
        assert isinstance(app.screen, MemoriesScreen) and app.screen.memory_type == "cases"
        text = screen_text(app)
        assert "no cases yet" in text and "reservation_cancellation" not in text  # it stayed


async def test_a_peer_s_files_are_listed_with_the_peer(workspace: Workspace, make_app: MakeApp) -> None:
    def preference(topic: str, text: str, peer_id: str | None) -> PolicyPlanItem:
        return PolicyPlanItem(
            kind="upsert",
            memory_type="preferences",
            target_name=topic,
            after_content=text,
            metadata={"fields": {"topic": topic}},
            peer_id=peer_id,
        )

    plan = PolicyUpdatePlan(
        items=[preference("seating", "aisle seats", None), preference("trains", "night trains", "alice")]
    )
    applied = await MemoryFilePolicyUpdater(memory_of(workspace)).apply(plan, None)
    assert len(applied.written_uris) == 2
    # a peer folder that leads outside the workspace is reported, never read; the others still show
    outside = workspace.root.parent / "outside"
    (outside / "memories/preferences").mkdir(parents=True)
    (outside / "memories/preferences/secret.md").write_text("not yours", encoding="utf-8")
    (workspace.root / "peers/mallory").symlink_to(outside, target_is_directory=True)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        app.screen.query_one("#memory-type", Select).value = "preferences"
        await settle(app, pilot)
        table = app.screen.query_one("#memories", VimTable)
        assert table.row_count == 2
        assert "seating" in screen_text(app) and "trains · peer alice" in screen_text(app)
        assert "1 unreadable:" in screen_text(app) and "not yours" not in screen_text(app)
        await pilot.press("j")
        await settle(app, pilot)
        text = screen_text(app)
        assert "peers/alice/memories/preferences/alice/trains.md" in text and "night trains" in text


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_title_counts_files_so_one_and_none_read_right(
    workspace: Workspace, make_app: MakeApp, size: tuple[int, int]
) -> None:
    """Issue 33: a type is a folder's name, so "1 cases" and "0 soul" read wrong."""
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await press_and_settle(pilot, "4")
        titles = set()
        for _ in workspace.reading.memory_types():
            titles.add(widget_text(app, app.screen.query_one("#memories-title")))
            await press_and_settle(pilot, "t")
        assert "experiences: 3 files" in titles
        assert "soul: 0 files" in titles, titles
        for title in titles:
            assert re.fullmatch(r"\w+: (1 file|\d+ files)", title), title
