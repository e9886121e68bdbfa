"""Run: the dataset is picked from the ones the workspace has (`d`), or typed with completion."""

from __future__ import annotations

from app_support import MakeApp
from textual.widgets import Input, OptionList

from ovtui.app.screens.dataset_picker import DatasetPicker
from ovtui.app.screens.run import RunScreen
from ovtui.core.config import RemoteDatasetConfig
from ovtui.wiring.workspace import Workspace


async def test_d_lists_the_workspaces_datasets_and_picks_one(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    root = sample_workspace.root
    (root / "datasets" / "holdout").mkdir()
    (root / "datasets" / "holdout" / "test.jsonl").write_text("", encoding="utf-8")
    (root / "datasets" / "empty_folder").mkdir()  # no split file: not a dataset
    sample_workspace.config.datasets["served"] = RemoteDatasetConfig(url="http://127.0.0.1:9")
    assert sample_workspace.reading.dataset_names() == ["holdout", "served", "support"]
    app = make_app(sample_workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        assert isinstance(app.screen, RunScreen)
        await pilot.press("d")
        await pilot.pause()
        picker = app.screen
        assert isinstance(picker, DatasetPicker)
        options = picker.query_one(OptionList)
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        # The current one, support, is highlighted and marked (the mark seen without colour).
        assert shown == ["  holdout", "  served", "▶ support"] and options.highlighted == 2
        await pilot.press("g")  # the first row, as in every list
        assert str(options.get_option_at_index(0).prompt) == "▶ holdout"
        await pilot.press("G")
        assert options.highlighted == 2 and str(options.get_option_at_index(0).prompt) == "  holdout"
        await pilot.press("k", "k", "enter")
        await pilot.pause()
        assert isinstance(app.screen, RunScreen)
        assert app.screen.query_one("#dataset", Input).value == "holdout"
