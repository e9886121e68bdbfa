"""ctrl+q (and q on a main screen's list) asks first when quitting would lose work (a run in progress,
a half-typed note), quits at once when nothing would be lost, and a second ctrl+q while it asks quits."""

from __future__ import annotations

import asyncio

from app_support import MakeApp, park_demo_plan, press_and_settle
from textual.widgets import Input

from ovtui.app.app import QuitModal
from ovtui.app.messages import RunEvents, RunFinished
from ovtui.app.screens.confirm import NoteModal
from ovtui.wiring.workspace import Workspace


async def test_ctrl_q_during_a_run_asks_first_and_escape_keeps_it_running(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    waiting, finished = asyncio.Event(), asyncio.Event()

    def hook(message: object) -> None:
        if isinstance(message, RunEvents) and any(e.kind == "plan_pending" for e in message.events):
            waiting.set()
        elif isinstance(message, RunFinished):
            finished.set()

    app = make_app(sample_workspace)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await pilot.press("t")
        await asyncio.wait_for(waiting.wait(), timeout=120)  # the run waits for a review: still running
        await pilot.press("ctrl+q")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, QuitModal)
        assert "a run is in progress: quitting stops it (its report is saved)" in dialog.body
        await pilot.press("escape")
        await pilot.pause()
        assert app.return_code is None and any(w.group == "run" and w.is_running for w in app.workers)
        await pilot.press("q")  # q on the Run screen asks the same, and "no" keeps the run
        await pilot.pause()
        assert isinstance(app.screen, QuitModal) and "a run is in progress" in app.screen.body
        await pilot.press("escape")
        await pilot.pause()
        assert app.return_code is None and any(w.group == "run" and w.is_running for w in app.workers)
        await pilot.press("c")  # cancelled (it stops at once while it waits): now nothing would be lost
        await asyncio.wait_for(finished.wait(), timeout=60)
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert app.return_code == 0


async def test_ctrl_q_with_a_half_typed_note_asks_first(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2", "n", *"half a tho")
        assert isinstance(app.screen, NoteModal)
        await press_and_settle(pilot, "ctrl+q")
        dialog = app.screen
        assert isinstance(dialog, QuitModal)
        assert "the note you are typing on reservation_cancellation is not saved" in dialog.body
        assert dialog.focused is dialog.query_one("#cancel")  # Enter keeps the note
        await press_and_settle(pilot, "enter")
        assert isinstance(app.screen, NoteModal) and app.return_code is None
        assert app.screen.query_one("#note", Input).value == "half a tho"
        await press_and_settle(pilot, "ctrl+q", "ctrl+q")  # asked again; a second ctrl+q quits
        assert app.return_code == 0


async def test_ctrl_q_quits_at_once_when_nothing_would_be_lost(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2", "n")  # a note dialog with nothing typed loses nothing
        await press_and_settle(pilot, "ctrl+q")
        assert app.return_code == 0
