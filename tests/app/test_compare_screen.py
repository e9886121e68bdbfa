"""The Compare screen: reached by its key and from the palette, an empty state that says what to
do, a real comparison through the Workspace facade (the report ``ovtui compare`` saves), and a
policy that is none said in one line."""

from __future__ import annotations

from pathlib import Path

from app_support import MakeApp, settle, wait_group, widget_text
from textual.command import DiscoveryHit
from textual.pilot import Pilot
from textual.widgets import Static

from ovtui.app.app import OvtuiApp
from ovtui.app.commands import BindingCommands
from ovtui.app.screens.compare import CompareScreen
from ovtui.app.views.compare import EMPTY
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
    (tmp_path / "no_experiences").mkdir()
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
