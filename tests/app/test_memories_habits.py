"""The Memories screen as lazygit and k9s users expect it: every column visible on a wide terminal and a
column per Right on a narrow one, trajectories told apart, a filter, an edit in $EDITOR recorded in
History, empty lists that say how to get data, and a problem banner that names the file first."""

from __future__ import annotations

from app_support import MakeApp, notifications, screen_text, settle, widget_text
from textual.widgets import Input, Select
from workspace_support import history_of

from ovtui.app.screens.memories import MemoriesScreen
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.errors import OvtuiError
from ovtui.core.fileformat import parse_memory
from ovtui.wiring.workspace import Workspace


async def test_a_wide_terminal_shows_every_column_and_right_steps_a_column(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(sample_workspace)
    async with app.run_test(size=(220, 30)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        header = next(line for line in screen_text(app).splitlines() if line.startswith("   name "))
        assert all(column in header for column in ("hot", "changed (UTC)", "links"))
    narrow = make_app(sample_workspace)
    async with narrow.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        await settle(narrow, pilot)
        table = narrow.screen.query_one("#memories", VimTable)
        assert table.max_scroll_x > 0
        name_width = table.column_edges[1]
        await pilot.press("right")
        await pilot.pause()
        assert table.scroll_x == name_width  # the next column starts at the left edge, whole
        await pilot.press("left")
        await pilot.pause()
        assert table.scroll_x == 0


async def test_trajectory_rows_show_their_time_and_outcome(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(sample_workspace)
    async with app.run_test(size=(130, 30)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        app.screen.query_one("#memory-type", Select).value = "trajectories"
        await settle(app, pilot)
        text = screen_text(app)
        assert "lost_baggage_report 2026-01-12 14:15" in text
        row = next(line for line in text.splitlines() if "lost_baggage_report 2026" in line)
        assert "partial" in row


async def test_the_filter_keeps_the_rows_holding_its_words(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(sample_workspace)
    async with app.run_test(size=(130, 30)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        await pilot.press("slash")
        assert isinstance(app.focused, Input)
        await pilot.press(*"carousel")  # in one experience's text, not in its name
        await pilot.press("enter")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, MemoriesScreen)
        assert list(screen.rows) == [sample_workspace.reading.experiences().policies[3].uri]
        assert "experiences: 1 of 12 files" in screen_text(app)
        assert isinstance(app.focused, VimTable)


async def test_e_edits_a_memory_in_the_editor_and_history_records_it(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    target = sample_workspace.root / "memories/experiences/baggage_allowance_question.md"
    app = make_app(sample_workspace, editor=lambda text: text + "\n- ALWAYS weigh the bag twice")
    messages: list[object] = []
    async with app.run_test(size=(130, 30), message_hook=messages.append) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        await pilot.press("e")
        await settle(app, pilot)
    written = parse_memory(target.read_text(encoding="utf-8"))
    assert written.content.endswith("- ALWAYS weigh the bag twice") and written.version == 2
    [record] = history_of(sample_workspace).list()
    assert record.kind == "edit"
    assert any(
        n.startswith(f"edited baggage_allowance_question: recorded in History as {record.id}")
        for n in notifications(messages)
    )


async def test_an_editor_that_fails_writes_nothing_and_says_so(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    def failing(_text: str) -> str | None:
        raise OvtuiError("the editor 'false' exited with status 1: the edit was not saved")

    app = make_app(sample_workspace, editor=failing)
    messages: list[object] = []
    async with app.run_test(size=(130, 30), message_hook=messages.append) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        await pilot.press("e")
        await settle(app, pilot)
    assert history_of(sample_workspace).list() == []
    assert any("exited with status 1" in n for n in notifications(messages))


async def test_an_empty_list_says_how_to_get_data(sample_workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(sample_workspace)
    async with app.run_test(size=(130, 30)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        app.screen.query_one("#memory-type", Select).value = "cases"
        await settle(app, pilot)
        view = widget_text(app, app.screen.query_one("#memory-markdown"))
        assert "no cases yet: a committed session whose tool calls ran becomes one" in view


async def test_the_unreadable_file_banner_names_the_file_at_80_columns(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    (sample_workspace.root / "memories/experiences/broken.md").write_text(
        'body\n\n<!-- MEMORY_FIELDS\n{"experience_name": "broken",}\n-->', encoding="utf-8"
    )
    app = make_app(sample_workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        assert "memories/experiences/broken.md" in screen_text(app)
