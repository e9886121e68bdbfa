"""The Memories screen shows each memory's hotness (uses and recency); unused ones show a dash; training
the sample workspace records the uses of the experiences its agent retrieved."""

from __future__ import annotations

import asyncio
import sys

from app_support import MakeApp, press_and_settle, screen_text
from workspace_support import kernel_of, memory_of

from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.context import ExecutionContext
from ovtui.environments.sample import SampleAgentExecutor
from ovtui.memory.hotness import HotnessLog
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.wiring.workspace import Workspace


async def test_hot_column(workspace: Workspace, make_app: MakeApp) -> None:
    used = next(iter(workspace.experiences().policies))
    HotnessLog(memory_of(workspace).paths).record([used.uri] * 3)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        table = app.screen.query_one("#memories", VimTable)
        hot = {str(key.value): str(table.get_row(key)[-1]) for key in table.rows}
        assert hot[used.uri] not in ("–", "0.00") and float(hot[used.uri]) > 0.5
        assert [v for k, v in hot.items() if k != used.uri] == ["–"] * (len(hot) - 1)
        table.move_cursor(row=table.get_row_index(used.uri))
        await press_and_settle(pilot)
        assert "hotness " in screen_text(app)


async def test_training_the_sample_workspace_makes_the_experiences_it_used_hot(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    """`ovtui train` with the sample agent records every experience it retrieves: after one epoch
    each one the final evaluation used (rerun here without recording) has uses and reads hot."""
    root = sample_workspace.root
    train = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ovtui",
        "train",
        str(root),
        "--epochs",
        "1",
        "--approve",
        "all",
        stdout=asyncio.subprocess.DEVNULL,
    )
    assert await train.wait() == 0
    workspace = Workspace(root)
    usage = workspace.hotness()
    final = workspace.experiences()
    cases = kernel_of(workspace).case_loader(workspace.config.trainer.dataset, "test", 100)
    assert isinstance(cases, ListCaseLoader)
    rerun = SampleAgentExecutor().execute_sync(cases.cases, final, ExecutionContext("check"))
    by_name = {e.name: e.uri for e in final.policies}
    used = {by_name[name] for r in rerun for name in r.metadata["experiences_used"]}
    assert used and all(usage[uri].count >= 1 for uri in used)
    assert all("/memories/experiences/" in uri for uri in usage)  # uses name experiences, nothing else
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        table = app.screen.query_one("#memories", VimTable)
        hot = {str(key.value): str(table.get_row(key)[-1]) for key in table.rows}
        assert all(float(hot[uri]) > 0 for uri in used), hot


async def test_a_hotness_file_ovtui_cannot_read_leaves_the_memories_listed(
    workspace: Workspace, make_app: MakeApp
) -> None:
    log = HotnessLog(memory_of(workspace).paths)
    log.record([next(iter(workspace.experiences().policies)).uri])
    log.compact()
    log.summary_path.write_text("{not json", encoding="utf-8")  # a broken bookkeeping file
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        table = app.screen.query_one("#memories", VimTable)
        assert table.row_count == len(workspace.experiences().policies)  # listed, none of them hot
        assert {str(table.get_row(key)[-1]) for key in table.rows} == {"–"}
        assert "hotness not shown: " in screen_text(app) and "hotness.json" in screen_text(app)
