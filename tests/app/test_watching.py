"""Watching: classification, a real watcher, and the app marking stale items after an outside edit."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from app_support import (
    PLAN_ID,
    MakeApp,
    edit_experience,
    park_demo_plan,
    press_and_settle,
    screen_text,
    settle,
)
from textual.widgets import Select
from watchfiles import Change

from ovtui.app.screens.memories import MemoriesScreen
from ovtui.app.screens.review import ReviewScreen
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.fileformat import render_memory
from ovtui.storage.watching import ChangeKind, classify, summarise
from ovtui.wiring.workspace import Workspace


def test_classify_keeps_only_what_the_app_shows() -> None:
    assert classify("memories/experiences/a.md") is ChangeKind.EXPERIENCE
    assert classify("memories/experiences/.a.md.x1.tmp") is None  # the temp file of an atomic write
    assert classify("memories/experiences/.overview.md") is None
    assert classify("memories/trajectories/t_20260101000000.md") is None
    assert classify("memories/preferences/food.md") is ChangeKind.MEMORY
    assert classify("memories/profile.md") is ChangeKind.MEMORY
    assert classify("memories/events/2026/11/29/pottery_class.md") is ChangeKind.MEMORY
    assert classify("memories/preferences/.food.md.x1.tmp") is None
    assert classify("peers/alice/memories/profile.md") is ChangeKind.MEMORY  # a peer's space
    assert classify("peers/alice/memories/preferences/trains.md") is ChangeKind.MEMORY
    assert classify("peers/alice/memories/.profile.md.x1.tmp") is None
    assert classify(".ovtui/pending/p1.json") is ChangeKind.PENDING
    assert classify(".ovtui/pending/settled/p1.json") is None  # its move out of pending/ is the news
    assert classify(".ovtui/lock") is None
    assert classify("history/20261129T120000000000_abcdef/memory_diff.json") is ChangeKind.HISTORY
    assert classify("inbox/rollouts/r1.json") is ChangeKind.INBOX
    assert classify("inbox/sessions/s1.jsonl") is ChangeKind.INBOX
    assert classify("inbox/rejected/r1.json") is None
    assert classify("runs/x/events.jsonl") is None
    assert classify("ovtui.toml") is ChangeKind.CONFIG


def test_summarise_groups_and_lists_new_inbox_files(tmp_path: Path) -> None:
    (tmp_path / "inbox" / "rollouts").mkdir(parents=True)
    (tmp_path / "inbox" / "rollouts" / "r1.json").write_text("{}")
    raw = {
        (Change.added, str(tmp_path / "inbox/rollouts/r1.json")),
        (Change.modified, str(tmp_path / "memories/experiences/a.md")),
        (Change.deleted, str(tmp_path / "inbox/rollouts/gone.json")),
        (Change.modified, str(tmp_path / "runs/x/events.jsonl")),
    }
    changes = summarise(tmp_path, raw)
    assert changes.kinds == {ChangeKind.INBOX, ChangeKind.EXPERIENCE}
    assert changes.new_inbox_files == ("inbox/rollouts/r1.json",)


async def test_the_watcher_reports_an_experience_edit(workspace: Workspace) -> None:
    stop, ready = asyncio.Event(), asyncio.Event()
    seen = []

    async def consume() -> None:
        async for changes in workspace.reading.watch(stop=stop, ready=ready, debounce_ms=200):
            seen.append(changes)
            if ChangeKind.EXPERIENCE in changes:
                stop.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(ready.wait(), timeout=5)  # the OS watches are in place: edits are seen
    edit_experience(workspace.root, "address_change", "## Situation\n- edited outside", 4)
    await asyncio.wait_for(task, timeout=5)
    assert seen[-1].paths[ChangeKind.EXPERIENCE] == ("memories/experiences/address_change.md",)


async def test_an_outside_edit_marks_pending_items_stale_without_a_restart(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace, watch_files=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        assert isinstance(app.screen, ReviewScreen)
        edit_experience(workspace.root, "reservation_cancellation", "## Situation\n- edited by hand", 3)
        for _ in range(100):  # the watcher reports within a second; each pause is a turn of the loop
            await pilot.pause(0.02)
            if workspace.review.pending_plan(PLAN_ID).stale:
                break
        await settle(app, pilot)
        assert workspace.review.pending_plan(PLAN_ID).stale == [0]
        assert "STALE" in screen_text(app)


async def test_a_plan_settled_by_another_process_leaves_the_review_queue(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace, watch_files=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        assert app.pending_count == 1
        script = (
            "import sys; from ovtui.wiring.workspace import Workspace; "
            "Workspace(sys.argv[1]).review.discard_pending(sys.argv[2])"
        )
        other = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, str(workspace.root), PLAN_ID
        )
        assert await other.wait() == 0
        for _ in range(250):  # the watcher reports within a second; each pause is a turn of the loop
            await pilot.pause(0.02)
            if app.pending_count == 0:
                break
        assert app.pending_count == 0
        assert workspace.review.pending_plan(PLAN_ID).status == "discarded"


async def test_the_memories_screen_follows_an_outside_edit_of_its_type(
    workspace: Workspace, make_app: MakeApp
) -> None:
    folder = workspace.root / "memories" / "preferences"
    folder.mkdir(parents=True)  # watched from the start (a file in a brand-new folder may race the watch)
    app = make_app(workspace, watch_files=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        assert isinstance(app.screen, MemoriesScreen)
        app.screen.query_one("#memory-type", Select).value = "preferences"
        await settle(app, pilot)
        table = app.screen.query_one("#memories", VimTable)
        assert table.row_count == 0
        fields = {"topic": "food", "version": 1, "memory_type": "preferences"}
        (folder / "food.md").write_text(render_memory("vegetarian meals", fields), encoding="utf-8")
        for _ in range(250):  # the watcher reports within a second; each pause is a turn of the loop
            await pilot.pause(0.02)
            if table.row_count:
                break
        await settle(app, pilot)
        assert table.row_count == 1 and "vegetarian meals" in screen_text(app)
