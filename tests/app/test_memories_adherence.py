"""The Memories screen shows what ``ovtui adherence`` records: the class in the table's adherence
column (a dash when nothing is recorded) and in the view the counts, the pass rates, and each
directive broken with the trajectories that broke it — at 80×24 and at 120×40."""

from __future__ import annotations

import pytest
from app_support import MakeApp, press_and_settle, widget_text
from workspace_support import memory_of

from ovtui.app.widgets.text_markdown import MemoryMarkdown, TextMarkdown
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.domain import Experience
from ovtui.plugins.adherence import Directive
from ovtui.train.adherence.store import AdherenceStore, Observation
from ovtui.wiring.workspace import Workspace

NEVER = Directive("never", ("refund_payment",), (), "NEVER call refund_payment")
BEFORE = Directive(
    "before", ("get_reservation", "cancel_reservation"), (), "ALWAYS call get_reservation first"
)


def record_uses(workspace: Workspace, experience: Experience) -> None:
    """Twelve uses, eleven breaking NEVER (each its own case), one following everything."""
    store = AdherenceStore(memory_of(workspace).paths)
    seen = [
        Observation(
            experience.uri,
            experience.name,
            experience.version,
            f"case_{n}",
            n % 2 == 0,
            ((NEVER, "violated" if n < 11 else "followed"), (BEFORE, "followed")),
            f"rollout:r{n}",
        )
        for n in range(12)
    ]
    store.record(seen, key="uses")


def shown(panel: TextMarkdown) -> str:
    """The Markdown the view holds (all of it: at 80×24 a person scrolls to its end)."""
    content = panel.content
    assert isinstance(content, MemoryMarkdown)
    return content.markup


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_adherence_column_and_the_panel(
    workspace: Workspace, make_app: MakeApp, size: tuple[int, int]
) -> None:
    first, *rest = workspace.reading.experiences().policies
    record_uses(workspace, first)
    app = make_app(workspace)
    async with app.run_test(size=size) as pilot:
        await press_and_settle(pilot, "4")
        table = app.screen.query_one("#memories", VimTable)
        column = [c.label for c in table.columns].index("adherence")
        cells = {key: str(table.get_row(key)[column]) for key in table.keys}
        assert cells[first.uri] == "ignored"  # 11 of 12 broke it: its interval lies above a half
        assert all(cells[e.uri] == "–" for e in rest)
        table.move_cursor(row=table.get_row_index(first.uri))
        await press_and_settle(pilot)
        panel = app.screen.query_one("#memory-markdown", TextMarkdown)
        view = " ".join(shown(panel).replace("*", "").replace("`", "").split())  # the view, scrolled through
        assert (
            "adherence: ignored" in widget_text(app, panel) or size[1] < 40
        )  # on the first screen at 120×40
        assert "adherence: ignored" in view and "12 use(s): 1 followed, 11 violated" in view
        assert "ignored 11 of 12: NEVER call refund_payment" in view
        assert "case case_10 (passed) · rollout:r10" in view  # the newest trajectories that broke it
        assert "ALWAYS call get_reservation first" not in view  # never broken: not listed
        table.move_cursor(row=table.get_row_index(rest[0].uri))
        await press_and_settle(pilot)
        assert "adherence not recorded" in shown(panel)
