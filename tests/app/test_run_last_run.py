"""The Run screen opens on the last finished run: a workspace trained from the command line (the
README's first command) shows that run's accuracy, charts and cases, not "No run yet"."""

from __future__ import annotations

from pathlib import Path

import pytest
from app_support import MakeApp, press_and_settle, screen_text, settle, wait_group, widget_text
from cli_support import run_ovtui
from workspace_support import build_sample_workspace

from ovtui.app.screens.case_results import CaseResultsScreen
from ovtui.app.screens.run import EMPTY_RUN, RunScreen
from ovtui.app.widgets.charts import LearningCurvePlot
from ovtui.wiring.workspace import Workspace


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """README command 1, as a user runs it: a real `ovtui train` process on the sample."""
    folder = tmp_path_factory.mktemp("readme")
    root = build_sample_workspace(folder / "my_agent")
    done = run_ovtui("train", str(root), "--epochs", "3", "--approve", "all", cwd=folder)
    assert done.returncode == 0, done.stderr
    return root


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_cli_trained_workspace_opens_on_its_run(
    trained: Path, make_app: MakeApp, size: tuple[int, int]
) -> None:
    workspace = Workspace(trained)
    report = workspace.reading.run_report()
    final = report.stage("final_eval")
    assert final is not None and final.passed == final.cases  # the sample learns every case
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await wait_group(app, pilot, "last-run")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, RunScreen)
        assert widget_text(app, screen.query_one("#run-status")) == "train: finished"
        accuracy = widget_text(app, screen.query_one("#accuracy"))
        assert f"now 100.00% ({final.passed}/{final.cases})" in accuracy, accuracy
        assert "No run yet" not in screen_text(app) and "no evaluation yet" not in accuracy
        assert report.run_id in " ".join(screen.query_one("#run-log").lines)  # type: ignore[attr-defined]
        await press_and_settle(pilot, "g")  # the learning curve of that run
        plot = screen.query_one(LearningCurvePlot)
        assert plot.display and "No evaluation yet" not in screen_text(app)
        await press_and_settle(pilot, "f")  # and its cases, case by case
        assert isinstance(app.screen, CaseResultsScreen)


async def test_a_workspace_without_runs_still_says_what_to_do(tmp_path: Path, make_app: MakeApp) -> None:
    app = make_app(Workspace(build_sample_workspace(tmp_path / "fresh")))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_group(app, pilot, "last-run")
        await settle(app, pilot)
        assert " ".join(EMPTY_RUN.split()) in " ".join(screen_text(app).split())
        assert widget_text(app, app.screen.query_one("#run-status")) == "idle"
