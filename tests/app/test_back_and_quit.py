"""esc and q mean the same on every screen (Pilot): one step back — inside a main screen from a pane
or a field to its list, a pushed screen or a dialog closed — and from a main screen's list q quits.
Leaving that would lose work asks first, and a "no" keeps it (test_quit.py: a half-typed note, a run)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from app_support import PLAN_ID, MakeApp, park_demo_plan, press_and_settle, screen_text, widget_text
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Button, Input

from ovtui.app.app import OvtuiApp, declared_bindings
from ovtui.app.keys import catalog
from ovtui.app.registry import binding_sources
from ovtui.app.screens.base import MainScreen
from ovtui.app.screens.case_results import CaseResultsScreen
from ovtui.app.screens.confirm import ConfirmModal, NoteModal
from ovtui.app.screens.dataset_picker import DatasetPicker
from ovtui.app.screens.evidence import EvidenceScreen
from ovtui.app.screens.help import HelpScreen
from ovtui.app.screens.run import RunScreen
from ovtui.app.screens.stands import StandsModal
from ovtui.train.reports import RunReport, StageReport
from ovtui.wiring.workspace import Workspace

Opener = Callable[[OvtuiApp, Pilot[Any]], Awaitable[None]]


def keys(*pressed: str) -> Opener:
    async def press(_: OvtuiApp, pilot: Pilot[Any]) -> None:
        await press_and_settle(pilot, *pressed)

    return press


async def case_results_after_an_eval(app: OvtuiApp, pilot: Pilot[Any]) -> None:
    """``f`` on Run once a run has reported (the report a finished eval leaves on the screen)."""
    run = app.screen
    assert isinstance(run, RunScreen)
    stage = StageReport(stage="eval", epoch=0, cases=1, passed=1, avg_reward=1.0, results={"a": [1]})
    run.last_report = RunReport(run_id="r", command="eval", backend="offline", dataset="d", stages=[stage])
    await press_and_settle(pilot, "f")


async def which_line_stands(app: OvtuiApp, pilot: Pilot[Any]) -> None:
    finding = {"line": 4, "rule": "- ALWAYS cancel", "other": "quick_cancellations", "other_line": "- NEVER"}
    app.push_screen(StandsModal(finding))
    await press_and_settle(pilot)


PUSHED: list[tuple[str, Opener, type[Screen[Any]]]] = [
    ("help", keys("question_mark"), HelpScreen),
    ("dataset picker", keys("d"), DatasetPicker),
    ("case results", case_results_after_an_eval, CaseResultsScreen),
    ("evidence", keys("2", "o"), EvidenceScreen),
    ("discard question", keys("2", "X"), ConfirmModal),
    ("note, nothing typed", keys("2", "n"), NoteModal),
    ("which line stands", which_line_stands, StandsModal),
]


@pytest.mark.parametrize("key", ["escape", "q"])
@pytest.mark.parametrize(("name", "open_it", "kind"), PUSHED, ids=[p[0] for p in PUSHED])
async def test_esc_and_q_close_every_pushed_screen_and_dialog(
    workspace: Workspace, make_app: MakeApp, key: str, name: str, open_it: Opener, kind: type[Screen[Any]]
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await open_it(app, pilot)
        below = app.screen_stack[-2]
        assert isinstance(app.screen, kind) and isinstance(below, MainScreen)
        if isinstance(app.screen, NoteModal):
            app.screen.query_one(Button).focus()  # in the note's field q is text (test_quit.py)
        await press_and_settle(pilot, key)
        assert app.screen is below and app.return_code is None
    assert [p.plan_id for p in workspace.review.pending_plans()] == [PLAN_ID]  # the discard was cancelled


# (the screen's key, a widget away from its list, the list) for every main screen
MAIN: list[tuple[str, str, str]] = [
    ("1", "#dataset", "#train"),
    ("2", "#diff", "#items"),
    ("3", "#history-filter", "#records"),
    ("4", "#memories-filter", "#memories"),
    ("5", "#session-detail", "#sessions"),
]


@pytest.mark.parametrize(("hotkey", "away", "home"), MAIN, ids=[m[2] for m in MAIN])
async def test_on_every_main_screen_esc_and_q_go_back_to_its_list_and_q_quits_from_there(
    workspace: Workspace, make_app: MakeApp, hotkey: str, away: str, home: str
) -> None:
    park_demo_plan(workspace)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, hotkey)
        screen = app.screen
        screen.query_one(away).focus()
        await press_and_settle(pilot, "escape")
        assert screen.query_one(home).has_focus
        await press_and_settle(pilot, "escape")  # esc on the list stays: only q quits
        assert app.screen is screen and app.return_code is None
        field = screen.query_one(away)
        field.focus()
        await press_and_settle(pilot, "q")
        if isinstance(field, Input):  # in a text field q is text; esc leaves the field
            assert field.value.endswith("q") and field.has_focus
            await press_and_settle(pilot, "escape")
        assert screen.query_one(home).has_focus and app.return_code is None
        await press_and_settle(pilot, "q")  # nothing would be lost: it quits at once
        assert app.return_code == 0


async def test_the_help_lists_esc_and_q_of_the_screen_and_the_keymap_moves_them(
    workspace: Workspace, make_app: MakeApp
) -> None:
    workspace.config.keys["sessions.back_q"] = "x"
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "5", "question_mark")
        shown = {info.id: info.keys for info in catalog(app, binding_sources(OvtuiApp), app.keymap)}
        assert (shown["sessions.back"], shown["sessions.back_q"]) == ("esc", "x")
        checked = {b.id for b in declared_bindings()}  # the ids `ovtui check` accepts under [keys]
        assert {f"{c}.back_q" for c in ("cases", "datasets", "stands", "evidence", "help", "note")} <= checked
        help_text = screen_text(app)
        assert "sessions.back_q" in help_text and "Back / quit" in help_text
        await press_and_settle(pilot, "q")  # the help closes with q
        assert not isinstance(app.screen, HelpScreen)
        await press_and_settle(pilot, "q")  # remapped: q does nothing on Sessions now…
        assert app.return_code is None
        await press_and_settle(pilot, "x")  # …x goes back, and from the list quits
        assert app.return_code == 0


async def test_sessions_without_any_says_how_to_get_them(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:  # all of it fits the smallest terminal
        await press_and_settle(pilot, "5")
        text = " ".join(widget_text(app, app.screen.query_one("#session-text")).split())
        assert text.startswith("No session yet") and "run ovtui serve and point the agent" in text
        assert "http://127.0.0.1:1933" in text and "ovtui commit . chat.jsonl or drop it into" in text
