"""A reload of the experiences after one file changed builds that file's row again and keeps the
others as they were; a memory the agent used is built again each time (its hotness decays)."""

from __future__ import annotations

from app_support import MakeApp, press_and_settle, settle
from workspace_support import memory_of

from ovtui.app.screens.memories import MemoriesScreen
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.fileformat import render_memory
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import Use
from ovtui.testing.big_workspace import experience_fields, experience_text, write_experiences
from ovtui.wiring.workspace import Workspace


async def test_a_reload_after_one_write_rebuilds_that_row_only(
    workspace: Workspace, make_app: MakeApp
) -> None:
    write_experiences(workspace.root, 30)
    edited, used = "generated_00007", "generated_00011"
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "4")
        screen = app.screen
        assert isinstance(screen, MemoriesScreen)
        by_name = {row.name: row for row in screen.rows.values()}
        UseLedger(memory_of(workspace).paths).record([Use(by_name[used].uri, "session:a", "find", 1)])
        before = dict(screen.rows)
        path = workspace.root / "memories" / "experiences" / f"{edited}.md"
        text = render_memory(experience_text(7) + "\n- and one more step", experience_fields(edited, 2))
        path.write_text(text, encoding="utf-8")

        screen.action_reload()
        await settle(app, pilot)

        after = screen.rows
        assert after.keys() == before.keys()
        rebuilt = {after[uri].name for uri in after if after[uri] is not before[uri]}
        assert rebuilt == {edited, used}
        edited_uri = by_name[edited].uri
        assert after[edited_uri].version == 2 and "one more step" in after[edited_uri].content
        assert after[by_name[used].uri].usage is not None  # its use shows: the row was built again
        table = screen.query_one("#memories", VimTable)
        assert str(table.get_row(edited_uri)[2]) == "2"  # the table shows the new version too
