"""The Compare screen: reached by its key and from the palette, an empty state that says what to
do, a real comparison through the Workspace facade (the report ``ovtui compare`` saves), and a
policy that is none said in one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import MakeApp, press_and_settle, screen_text, settle, wait_group, widget_text
from textual.command import DiscoveryHit
from textual.pilot import Pilot
from textual.widgets import Input, Static

from ovtui.app.app import OvtuiApp
from ovtui.app.commands import BindingCommands
from ovtui.app.screens.compare import CompareScreen
from ovtui.app.screens.help import HelpScreen
from ovtui.app.views.compare import EMPTY
from ovtui.app.widgets.footer import KeyFooter
from ovtui.app.widgets.top_bar import TopBar
from ovtui.wiring.workspace import TrainOptions, Workspace


def flat(text: str) -> str:
    return " ".join(text.split())


async def compare(app: OvtuiApp, pilot: Pilot[None], a: str, b: str) -> CompareScreen:
    await pilot.press("C")
    await settle(app, pilot)
    assert isinstance(app.screen, CompareScreen)
    app.screen.query_one("#policy-a").value = a  # type: ignore[attr-defined]
    app.screen.query_one("#policy-b").value = b  # type: ignore[attr-defined]
    await pilot.press("enter")
    await wait_group(app, pilot, "compare")
    await settle(app, pilot)
    return app.screen


async def test_the_screen_says_what_to_do_before_any_comparison(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("C")
        await settle(app, pilot)
        assert isinstance(app.screen, CompareScreen) and app.current_mode == "compare"
        assert flat(EMPTY) == flat(widget_text(app, app.screen.query_one("#compare-text")))
        await pilot.press("enter")  # B is still empty
        await settle(app, pilot)
        assert "name both policies" in widget_text(app, app.screen.query_one("#compare-status"))


async def test_the_palette_offers_the_compare_screen(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        provider = BindingCommands(app.screen)
        titles = [str(hit.text) async for hit in provider.discover() if isinstance(hit, DiscoveryHit)]
        assert "Compare (App)" in titles, titles


async def test_a_comparison_shows_what_ovtui_compare_saved(
    sample_workspace: Workspace, make_app: MakeApp, tmp_path: Path
) -> None:
    await sample_workspace.runs.train(TrainOptions(epochs=1, approve="all", eval_split=None))
    app = make_app(sample_workspace)
    # A: a policy of manners only (an empty folder is refused: it is no policy), which solves no task.
    (tmp_path / "no_experiences").mkdir()
    manners = sample_workspace.root / "memories/experiences/conversation_etiquette.md"
    (tmp_path / "no_experiences" / manners.name).write_bytes(manners.read_bytes())
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await compare(app, pilot, str(tmp_path / "no_experiences"), "current")
        report = sample_workspace.reading.run_report()
        assert report.command == "compare" and report.comparison is not None
        result = report.comparison
        assert result.ab.gained  # what one epoch learned wins cases an agent without it loses
        assert all(result.evidence[case]["b"] for case in result.ab.gained)
        shown = flat(str(screen.query_one("#compare-text", Static).render()))  # all of it, seen or not
        assert f"verdict: {result.verdict}" in shown
        for line in result.lines()[:-1]:  # Δ, CI, p, the A/A null, the flips with their evidence
            assert flat(line) in shown, line
        status = widget_text(app, screen.query_one("#compare-status"))
        assert report.run_id in status
        assert screen.query_one("#compare-bar").percentage == 1  # type: ignore[attr-defined]


async def test_a_policy_that_is_none_is_said_in_one_line(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(sample_workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await compare(app, pilot, "current", "no-such-record")
        status = widget_text(app, screen.query_one("#compare-status"))
        assert status.startswith("compare failed: ") and "no-such-record" in status
        assert not screen.running


def footer_keys(app: OvtuiApp) -> str:
    return widget_text(app, app.screen.query_one(KeyFooter))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_esc_leaves_a_field_and_the_keys_work_again(
    workspace: Workspace, make_app: MakeApp, size: tuple[int, int]
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await press_and_settle(pilot, "C")
        screen = app.screen
        assert isinstance(screen.focused, Input) and screen.focused.id == "policy-a"
        assert "esc Leave field" in footer_keys(app)  # in a field, the footer says how out
        await press_and_settle(pilot, "escape")
        assert screen.focused is screen.query_one("#compare-result")
        assert "esc Leave field" not in footer_keys(app) and "c Compare" in footer_keys(app)
        await press_and_settle(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        await press_and_settle(pilot, "escape")
        assert screen.query_one("#policy-a", Input).value == "current"  # nothing typed into A
        await press_and_settle(pilot, "3")
        assert app.current_mode == "history"


async def test_tab_never_lands_on_the_top_bar_switch(workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await press_and_settle(pilot, "C")
        bar = app.screen.query_one(TopBar)
        for _ in range(8):  # round every focusable widget of the screen, twice over
            await press_and_settle(pilot, "tab")
            assert app.screen.focused is not None and app.screen.focused.parent is not bar
        assert "▔" not in screen_text(app).splitlines()[0]  # no focus border drawn over the bar


async def test_after_a_comparison_esc_from_b_stays_out_of_a(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(sample_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await compare(app, pilot, "current", "current")
        assert screen.focused is screen.query_one("#compare-result")  # the result, keys free
        screen.query_one("#policy-b").focus()
        await press_and_settle(pilot, "escape")
        assert screen.focused is screen.query_one("#compare-result")
