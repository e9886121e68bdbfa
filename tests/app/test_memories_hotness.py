"""The Memories screen shows each memory's record in the use ledger: hotness, uses, sessions, success
share and last use in the table (a dash when never used), and in the view the outcome histogram,
the current version's uses and the newest trajectories it fed; training the sample workspace
records the uses of the experiences its agent retrieved and links each graded rollout to them."""

from __future__ import annotations

import asyncio
import sys

from app_support import MakeApp, press_and_settle, screen_text, widget_text
from workspace_support import kernel_of, memory_of

from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.context import ExecutionContext
from ovtui.environments.sample import SampleAgentExecutor
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import Outcome, Result, Use
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.wiring.workspace import Workspace

NOW = 1_800_000_000.0  # 2027-01-15 08:00 UTC


def cells(table: VimTable) -> dict[str, dict[str, str]]:
    """Each row's cells by the table's own column names (``changed`` without its "(UTC)")."""
    columns = [str(column.label).removesuffix(" (UTC)") for column in table.columns]
    return {key: dict(zip(columns, map(str, table.get_row(key)), strict=True)) for key in table.keys}


async def test_usage_columns_and_the_outcome_histogram(workspace: Workspace, make_app: MakeApp) -> None:
    used = next(iter(workspace.reading.experiences().policies))
    trajectory = "viking://user/default/memories/trajectories/refund_1.md"
    UseLedger(memory_of(workspace).paths).record(
        [
            Use(used.uri, "session:a", "find", used.version),
            Use(used.uri, "session:a", "read", used.version),
            Use(used.uri, "session:b", "search", used.version),
            Outcome("session:a", (Result("success", trajectory), Result("success"), Result("failure"))),
        ],
        at=NOW,
    )
    app = make_app(workspace)
    async with app.run_test(size=(160, 50)) as pilot:
        await press_and_settle(pilot, "4")
        table = app.screen.query_one("#memories", VimTable)
        rows = cells(table)
        mine = rows.pop(used.uri)
        assert (mine["uses"], mine["sessions"], mine["success"], mine["last use"]) == (
            "3",
            "2",
            "67%",
            "2027-01-15",
        )
        assert all(
            row[c] == "–" for row in rows.values() for c in ("hot", "uses", "sessions", "success", "last use")
        )
        table.move_cursor(row=table.get_row_index(used.uri))
        await press_and_settle(pilot)
        text = screen_text(app)
        assert "used 3×" in text and "by 2 session(s)" in text and "hotness " in text
        assert f"version {used.version} (current): 3 use(s) · 2 success, 1 failure" in text
        assert "success" in text and "██" in text  # the histogram's bars
        view = widget_text(app, app.screen.query_one("#memory-markdown"))  # wrapped where the pane is narrow
        assert "memories/trajectories/refund_1.md (success)" in view


async def test_training_the_sample_workspace_records_uses_and_links_their_outcomes(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    """`ovtui train` with the sample agent records every experience it retrieves, by each case's
    rollout, and links the rollout's outcome once graded (the trajectories of the training cases,
    the grades of the evaluations)."""
    root = sample_workspace.root
    # Without a validation split the gate does not run: its overlay runs record uses with no outcome
    # linked (as compare's do), which this test of training's own rollouts leaves out; the run's
    # evaluations score the test split, unsealed for it.
    (root / "datasets/support/validation.jsonl").unlink()
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
        "--eval-split",
        "test",
        "--unseal",
        stdout=asyncio.subprocess.DEVNULL,
    )
    assert await train.wait() == 0
    workspace = Workspace(root)
    usage = workspace.reading.memory_uses()
    final = workspace.reading.experiences()
    cases = kernel_of(workspace).case_loader(workspace.config.trainer.dataset, "test", 100)
    assert isinstance(cases, ListCaseLoader)
    rerun = SampleAgentExecutor().execute_sync(cases.cases, final, ExecutionContext("check"))
    by_name = {e.name: e.uri for e in final.policies}
    used = {by_name[name] for r in rerun for name in r.metadata["experiences_used"]}
    assert used and all(usage[uri].count >= 1 for uri in used)
    assert all("/memories/experiences/" in uri for uri in usage)  # uses name experiences, nothing else
    # every use was by a graded rollout: each use has its outcome, and training fed trajectories
    assert all(sum(u.outcomes) == u.count for u in usage.values())
    fed = [f for uri in usage for f in workspace.reading.memory_fed(uri) if f.trajectory]
    assert fed and all("/memories/trajectories/" in str(f.trajectory) for f in fed)
    app = make_app(workspace)
    async with app.run_test(size=(160, 50)) as pilot:
        await press_and_settle(pilot, "4")
        rows = cells(app.screen.query_one("#memories", VimTable))
        assert all(float(rows[uri]["hot"]) > 0 and rows[uri]["success"] != "–" for uri in used), rows


async def test_a_ledger_ovtui_cannot_read_leaves_the_memories_listed(
    workspace: Workspace, make_app: MakeApp
) -> None:
    ledger = UseLedger(memory_of(workspace).paths)
    ledger.record([Use(next(iter(workspace.reading.experiences().policies)).uri, "session:a")])
    ledger.compact()
    ledger.summary_path.write_text("{not json", encoding="utf-8")  # a broken bookkeeping file
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        table = app.screen.query_one("#memories", VimTable)
        assert table.row_count == len(workspace.reading.experiences().policies)  # listed, none of them used
        assert {row["uses"] for row in cells(table).values()} == {"–"}
        assert "uses not shown: " in screen_text(app) and "ledger.json" in screen_text(app)
