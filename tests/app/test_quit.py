"""ctrl+q (and q on a main screen's list) asks first when quitting would lose work (a run in progress,
a half-typed note), quits at once when nothing would be lost, and a second ctrl+q while it asks quits;
esc on a half-typed note asks before it drops the note."""

from __future__ import annotations

import asyncio
from typing import Any

from app_support import MakeApp, park_demo_plan, press_and_settle
from textual.pilot import Pilot
from textual.widgets import Button, Input

from ovtui.app.app import QuitModal
from ovtui.app.messages import RunEvents, RunFinished
from ovtui.app.screens.confirm import ConfirmModal, NoteModal
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


async def asked_over_a_half_typed_note(pilot: Pilot[Any], key: str) -> ConfirmModal:
    """The question ``key`` asks over a note typed and not saved: it names the note, and enter (its
    default) answers no and keeps the note."""
    await press_and_settle(pilot, "2", "n", *"half a tho")
    note = pilot.app.screen
    assert isinstance(note, NoteModal)
    await press_and_settle(pilot, key)
    question = pilot.app.screen
    assert isinstance(question, ConfirmModal)
    assert "the note you are typing on reservation_cancellation is not saved" in question.body
    assert question.focused is question.query_one("#cancel")
    await press_and_settle(pilot, "enter")
    assert pilot.app.screen is note and note.query_one("#note", Input).value == "half a tho"
    return question


async def test_ctrl_q_with_a_half_typed_note_asks_first(workspace: Workspace, make_app: MakeApp) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        assert isinstance(await asked_over_a_half_typed_note(pilot, "ctrl+q"), QuitModal)
        assert app.return_code is None
        await press_and_settle(pilot, "ctrl+q", "ctrl+q")  # asked again; a second ctrl+q quits
        assert app.return_code == 0


async def test_esc_on_a_half_typed_note_asks_first_and_no_keeps_the_note(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        assert not isinstance(await asked_over_a_half_typed_note(pilot, "escape"), QuitModal)
        note = app.screen
        await press_and_settle(pilot, "escape", "q")  # q in the question is "no" too
        assert app.screen is note and note.query_one("#note", Input).value == "half a tho"
        await press_and_settle(pilot, "escape")
        app.screen.query_one("#confirm", Button).press()  # Discard: the note goes, nothing is saved
        await press_and_settle(pilot)
        assert not isinstance(app.screen, NoteModal | ConfirmModal) and app.return_code is None
    assert [d.note for d in workspace.review.pending_plans()[0].decisions] == ["", "", ""]


async def test_ctrl_q_quits_at_once_when_nothing_would_be_lost(
    workspace: Workspace, make_app: MakeApp
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2", "n")  # a note dialog with nothing typed loses nothing
        await press_and_settle(pilot, "ctrl+q")
        assert app.return_code == 0
