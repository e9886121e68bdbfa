"""Snapshots of the main screens at the 80×24 floor, plus the wide side-by-side review, from deterministic
data (no clocks, no ETAs, no tmp paths; the run log's times come from the events, in UTC).

Update with ``pytest tests/app/test_snapshots.py --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from app_support import SnapCompare, make_workspace, park_demo_plan, park_long_summary_plan
from textual.pilot import Pilot
from workspace_support import history_of

from ovtui.app.app import OvtuiApp
from ovtui.app.screens.memories import MemoriesScreen
from ovtui.core.decisions import ReviewDecision
from ovtui.core.events import Event
from ovtui.memory.memory_diff import FileChange, Review, build_memory_diff
from ovtui.memory.transaction import commit_record

FLOOR = (80, 24)
WIDE = (120, 36)
FIXED = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
AT = FIXED.timestamp()


@pytest.fixture
def app(tmp_path: Path) -> OvtuiApp:
    workspace = make_workspace(tmp_path / "ws")
    park_demo_plan(workspace)
    return OvtuiApp(workspace, watch_files=False)


def with_history(app: OvtuiApp) -> OvtuiApp:
    root = app.workspace.root
    before = (root / "memories/experiences/address_change.md").read_text()
    after = before.replace("- none yet", "- ALWAYS confirm the new address back to the customer")
    uri = "viking://user/default/memories/experiences/address_change.md"
    review = Review(
        plan_id="plan0000demo", decisions=[ReviewDecision(item=0, decision="approved", note="clear win")]
    )
    record = build_memory_diff([FileChange(uri, "experiences", before, after)], review=review, now=FIXED)
    # Recorded without writing its file: the screen shows the record, not the memory.
    commit_record(history_of(app.workspace).paths, record, "20261129T120000000000_abcdef", dry_run=True)
    return app


RUN_EVENTS = [
    Event("run_started", {"command": "train", "dataset": "support", "backend": "offline", "epochs": 2}, AT),
    Event("eval", {"stage": "baseline_eval", "epoch": -1, "cases": 15, "passed": 3, "accuracy": 0.2}, AT + 1),
    Event("progress", {"stage": "train_rollouts", "done": 16, "total": 30, "epoch": 0}, AT + 2),
    Event("counts", {"rollouts": 16, "trajectories": 16, "gradients": 11, "plans": 2}, AT + 2),
    Event(
        "plan_applied", {"plan_id": "p1", "written": 3, "deleted": 0, "errors": [], "dry_run": False}, AT + 3
    ),
    Event("log", {"message": "plan is empty: nothing to review", "level": "info"}, AT + 4),
]


WAITING_EVENTS = [
    *RUN_EVENTS,
    Event("plan_pending", {"plan_id": "p2", "items": 5, "waiting": True}, AT + 5),
]


def feeding(events: list[Event]) -> Callable[[Pilot[None]], Awaitable[None]]:
    """A ``run_before`` that hands ``events`` to the app as a run's worker would."""

    async def feed(pilot: Pilot[None]) -> None:
        for event in events:
            assert isinstance(pilot.app, OvtuiApp)
            pilot.app.pump(event)
        await pilot.pause()

    return feed


def test_run_screen_during_a_run(app: OvtuiApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(app, terminal_size=FLOOR, run_before=feeding(RUN_EVENTS))


def test_run_screen_waiting_for_review(app: OvtuiApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(app, terminal_size=FLOOR, run_before=feeding(WAITING_EVENTS))


def test_review_at_the_floor(app: OvtuiApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(app, terminal_size=FLOOR, press=["2"])


def test_review_long_summary_scrolled_at_the_floor(tmp_path: Path, snap_compare: SnapCompare) -> None:
    """The summary scrolled to its end (tab, tab, end): its why and its ⚠ warnings, the focus bar."""
    workspace = make_workspace(tmp_path / "ws")
    park_long_summary_plan(workspace)
    app = OvtuiApp(workspace, watch_files=False)
    assert snap_compare(app, terminal_size=FLOOR, press=["2", "tab", "tab", "end"])


def test_review_side_by_side(app: OvtuiApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(app, terminal_size=WIDE, press=["2"])


def test_review_delete_needs_confirmation(app: OvtuiApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(app, terminal_size=FLOOR, press=["2", "j", "j", "a"])


def test_history_record_diff(app: OvtuiApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(with_history(app), terminal_size=FLOOR, press=["3"])


async def with_the_readers_notes(pilot: Pilot[None]) -> None:
    """Memories, the cursor on the second file, once the view shows what the agent would not act on
    (the reader is built when the list has been still for a moment)."""
    await pilot.press("4", "j")
    screen = pilot.app.screen
    assert isinstance(screen, MemoriesScreen)
    await asyncio.wait_for(screen.reader_ready.wait(), timeout=10)
    await pilot.pause()


def test_memories_list_and_markdown(app: OvtuiApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(app, terminal_size=FLOOR, run_before=with_the_readers_notes)


def test_help_lists_bindings(app: OvtuiApp, snap_compare: SnapCompare) -> None:
    assert snap_compare(app, terminal_size=WIDE, press=["question_mark"])
