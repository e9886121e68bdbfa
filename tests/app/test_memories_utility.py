"""The Memories screen shows what ``ovtui utility`` measured: the verdict in the table's utility
column (a dash when never measured, a star when measured on another version),
and in the view the paired result, the tokens per case and when and against what it was measured."""

from __future__ import annotations

from app_support import MakeApp, press_and_settle, screen_text, widget_text
from workspace_support import memory_of

from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.domain import Experience
from ovtui.train.utility import ExperienceUtility, save_utility
from ovtui.wiring.workspace import Workspace


def utility_cells(table: VimTable) -> dict[str, str]:
    """Each row's utility cell, by URI."""
    column = [c.label for c in table.columns].index("utility")
    return {key: str(table.get_row(key)[column]) for key in table.keys}


def measured(experience: Experience, version: int) -> ExperienceUtility:
    return ExperienceUtility(
        name=experience.name,
        uri=experience.uri,
        version=version,
        verdict="harmful",
        cases=["refund_train_000", "refund_train_001", "refund_train_002"],
        trials=2,
        with_rate=0.25,
        without_rate=0.75,
        delta=-0.5,
        se=0.1,
        ci=[-0.75, -0.25],
        p_value=0.0312,
        tokens_per_case=87,
        tokenizer="cl100k_base (tiktoken)",
        calls=6,
        policy="policy-snapshot:0123456789abcdef",
        measured_at="2026-12-01T16:00:00+00:00",
    )


async def test_the_utility_column_and_the_panel(workspace: Workspace, make_app: MakeApp) -> None:
    first, second, *rest = workspace.reading.experiences().policies
    store = memory_of(workspace)
    save_utility(store.paths, store.lock, measured(first, first.version), "estimate")
    save_utility(store.paths, store.lock, measured(second, second.version + 1), "estimate")
    app = make_app(workspace)
    async with app.run_test(size=(220, 50)) as pilot:
        await press_and_settle(pilot, "4")
        header = next(line for line in screen_text(app).splitlines() if line.startswith("   name "))
        assert "utility" in header and header.split("utility")[1].split()[:2] == ["hot", "links"]  # all shown
        table = app.screen.query_one("#memories", VimTable)
        shown = utility_cells(table)
        assert shown[first.uri] == "harmful"
        assert shown[second.uri] == "harmful*"  # measured on a version it no longer is
        assert all(shown[e.uri] == "–" for e in rest)
        table.move_cursor(row=table.get_row_index(first.uri))
        await press_and_settle(pilot)
        view = " ".join(widget_text(app, app.screen.query_one("#memory-markdown")).split())
        assert "utility: harmful · with it 25.0%, without it 75.0%: Δ -50.0%, 95% CI [-75.0%, -25.0%]" in view
        assert (
            "3 case(s) × 2 trial(s) · 87 prompt tokens per case it is served for "
            "(counted with cl100k_base (tiktoken))"
        ) in view
        assert "measured 2026-12-01T16:00:00+00:00 against policy-snapshot:0123456789abcdef" in view
        table.move_cursor(row=table.get_row_index(rest[0].uri))
        await press_and_settle(pilot)
        view = " ".join(widget_text(app, app.screen.query_one("#memory-markdown")).split())
        assert "utility not measured: ovtui utility --experience NAME runs its ablation" in view
