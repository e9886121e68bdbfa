"""Big lists: Memories and History show a screenful of rows at once, fill the rest in chunks while
the keys keep working, and History keeps records of one second in the order they were written."""

from __future__ import annotations

import asyncio
import gc
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from app_support import MakeApp, notifications, settle, widget_text
from textual.message import Message

from ovtui.app.screens import memories
from ovtui.app.screens.base import MainScreen
from ovtui.app.screens.history import HistoryScreen
from ovtui.app.screens.memories import MemoriesScreen
from ovtui.app.widgets.vim_table import VimTable
from ovtui.core.domain import ExperienceSet
from ovtui.testing.big_workspace import write_experiences, write_history
from ovtui.wiring.workspace import Workspace

BIG = 1_000  # five chunks after the first screenful: the fill is still going when a key comes


class FillLog:
    """What one table posted while it filled: the chunks, and where the cursor went meanwhile."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.chunks: list[tuple[int, int]] = []  # (rows shown, rows in that fill)
        self.cursor: list[tuple[int, int]] = []  # (cursor row, rows in the table then)
        self.first_rows = asyncio.Event()
        self.all_rows = asyncio.Event()
        self.press_while_filling: str | None = None
        # Set once that key moved the cursor: the full load is held until then, so the key is
        # handled while rows are still to come however fast the load is.
        self.moved = threading.Event()
        self.frozen = 0  # objects gc.freeze kept out of full collections once the big fill began
        self.detail = ""  # what the detail pane showed once every row was in
        self.detail_id = "memory-markdown" if table_id == "memories" else "record-header"

    def hook(self, message: Message) -> None:
        if isinstance(message, VimTable.RowsAdded) and message.table.id == self.table_id:
            self.chunks.append((message.shown, message.total))
            self.first_rows.set()
            if message.shown < BIG and self.press_while_filling:
                message.table.app.simulate_key(self.press_while_filling)  # the full listing is to come
                self.press_while_filling = None
            if message.shown == message.total >= BIG:
                self.all_rows.set()
        elif isinstance(message, VimTable.RowHighlighted) and message.table.id == self.table_id:
            self.cursor.append((message.cursor_row, message.table.row_count))
            if message.cursor_row == 1:
                self.moved.set()

    def hold(self, monkeypatch: pytest.MonkeyPatch, workspace: Workspace, load: str) -> None:
        """Make ``workspace.reading.<load>`` (the screen's full load, in its thread) wait for the key."""
        real = getattr(workspace.reading, load)

        def held(*args: Any, **kwargs: Any) -> Any:
            self.moved.wait(30)  # bounded: a key that never came fails the assertions, not a hang
            return real(*args, **kwargs)

        monkeypatch.setattr(workspace.reading, load, held)


def big_workspace(workspace: Workspace) -> Workspace:
    write_experiences(workspace.root, BIG)
    write_history(workspace.root, BIG)
    return Workspace(workspace.root)


async def open_and_fill(make_app: MakeApp, workspace: Workspace, key: str, log: FillLog) -> VimTable:
    """Press ``key`` on a fresh app; returns the table once its first rows are in (the fill goes on)."""
    app = make_app(workspace)
    async with app.run_test(size=(120, 40), message_hook=log.hook) as pilot:
        await pilot.pause()
        app.simulate_key(key)
        await asyncio.wait_for(log.first_rows.wait(), 30)
        table = app.screen.query_one(f"#{log.table_id}", VimTable)
        await asyncio.wait_for(log.all_rows.wait(), 60)
        await settle(app, pilot)
        log.frozen = gc.get_freeze_count()
        screen = app.screen
        assert isinstance(screen, MainScreen)
        while screen._follow_timer is not None:  # the detail waits for the cursor to rest
            await pilot.pause()
        await settle(app, pilot)
        log.detail = widget_text(app, screen.query_one(f"#{log.detail_id}"))
    return table


async def test_memories_shows_a_screenful_first_and_moves_while_the_rest_arrive(
    workspace: Workspace, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = big_workspace(workspace)
    thresholds = gc.get_threshold()
    total = len(list((workspace.root / "memories" / "experiences").glob("*.md")))
    log = FillLog("memories")
    log.press_while_filling = "j"
    log.hold(monkeypatch, workspace, "experiences")
    table = await open_and_fill(make_app, workspace, "4", log)
    first_shown, first_total = log.chunks[0]
    # The first rows are one screenful, read before the full load began: that fill had no more rows.
    assert 0 < first_shown == first_total <= 40 < total
    # The full fill came whole, at once (every row reachable), and kept them: the cursor stayed.
    assert next(shown for shown, fill_total in log.chunks[1:] if fill_total == total) == total
    # j moved the cursor while rows were still to come, and the cursor stayed there.
    assert any(row == 1 and rows < total for row, rows in log.cursor)
    assert table.row_count == total and table.cursor_row == 1
    # The detail pane followed the key: it shows the file of the row under the cursor.
    name = str(table.selected_key).rsplit("/", 1)[-1].removesuffix(".md")
    assert f"{name} · production · version 1" in log.detail
    # The big fill froze what was alive when it began, and the app's end thaws it again.
    assert log.frozen > 0 and gc.get_freeze_count() == 0 and gc.get_threshold() == thresholds


async def test_history_shows_the_newest_screenful_first_and_moves_while_the_rest_arrive(
    workspace: Workspace, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = big_workspace(workspace)
    log = FillLog("records")
    log.press_while_filling = "j"
    log.hold(monkeypatch, workspace, "history")
    table = await open_and_fill(make_app, workspace, "3", log)
    first_shown, first_total = log.chunks[0]
    assert 0 < first_shown == first_total <= 40 < BIG  # from the index's last lines only
    # the full listing came whole and kept them (the cursor stayed): they were its newest rows
    assert next(shown for shown, fill_total in log.chunks[1:] if fill_total == BIG) == BIG
    assert any(row == 1 and rows < BIG for row, rows in log.cursor)
    assert table.cursor_row == 1 and f"history/{table.selected_key}" in log.detail
    keys = list(table.keys)
    assert len(keys) == BIG and keys == sorted(keys, reverse=True)  # newest first, preview included


async def test_history_orders_records_of_one_second_by_their_full_time(
    workspace: Workspace, make_app: MakeApp
) -> None:
    second = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    step = timedelta(microseconds=1_000)
    written = write_history(workspace.root, 3, start=second, step=step)
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one("#records", VimTable)
        # Two more in the same second: the reload adds them to the rows it has (and sorts).
        written += write_history(workspace.root, 2, start=second + 3 * step, step=step)
        screen.load()
        await settle(app, pilot)
        shown = list(table.keys)
        assert [str(table.get_row_at(i)[0]) for i in range(5)] == ["2026-11-30 12:00:00"] * 5
        assert shown[:5] == written[::-1]  # the last written first, to the microsecond


async def test_a_big_folder_never_read_lists_its_names_first_then_each_file(
    workspace: Workspace, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Experiences copied in (no ovtui process read them): every name is in the list before the
    files are read, G reaches the last, the view and ``e`` say the file is still being read, and
    the rows fill in once it is; the next open, with the files read once, has no names-first step."""
    write_experiences(workspace.root, 60)
    workspace = Workspace(workspace.root)
    monkeypatch.setattr(memories, "NAMES_FIRST_AT", 50)
    total = len(list((workspace.root / "memories" / "experiences").glob("*.md")))
    release = threading.Event()
    load = workspace.reading.experiences

    def held(previous: ExperienceSet | None = None) -> ExperienceSet:
        assert release.wait(30), "never released"
        return load(previous)

    monkeypatch.setattr(workspace.reading, "experiences", held)
    loaded: list[MemoriesScreen.Loaded] = []
    posted: list[object] = []
    arrived = asyncio.Event()

    def hook(message: Message) -> None:
        posted.append(message)
        if isinstance(message, MemoriesScreen.Loaded):
            loaded.append(message)
            arrived.set()

    app = make_app(workspace)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await pilot.press("4")
        await asyncio.wait_for(arrived.wait(), 30)
        await pilot.pause()  # not settle: it waits for the held worker
        screen = app.screen
        assert isinstance(screen, MemoriesScreen)
        table = screen.query_one("#memories", VimTable)
        assert [m.reading for m in loaded] == [True] and table.row_count == total
        assert "reading each file…" in widget_text(app, screen.query_one("#memories-title"))
        await pilot.press("G")
        await pilot.pause()  # not settle: it waits for the held worker
        last = str(table.selected_key)
        assert table.cursor_row == total - 1 and last == str(list(table.keys)[-1])
        assert tuple(table.get_row_at(total - 1)[1:3]) == (memories.READING, memories.READING)
        while screen._follow_timer is not None:
            await pilot.pause()
        await pilot.pause()  # not settle: it waits for the held worker
        assert "this file shows once every file is read" in widget_text(
            app, screen.query_one("#memory-markdown")
        )
        await pilot.press("e")
        assert any("still being read: edit once the list is in" in n for n in notifications(posted))

        arrived.clear()
        release.set()
        await asyncio.wait_for(arrived.wait(), 30)
        await settle(app, pilot)
        assert [m.reading for m in loaded] == [True, False]
        assert table.cursor_row == total - 1 and str(table.selected_key) == last  # the cursor stayed
        file = next(e for e in load().policies if e.uri == last)
        status, version = file.status.value, file.version
        assert tuple(table.get_row_at(total - 1)[1:3]) == (status, str(version))
        view = widget_text(app, screen.query_one("#memory-markdown"))
        assert f"{file.name} · {status} · version {version}" in view
        assert "reading" not in widget_text(app, screen.query_one("#memories-title"))

    loaded.clear()
    arrived.clear()
    again = make_app(Workspace(workspace.root))
    async with again.run_test(size=(120, 40), message_hook=hook) as pilot:
        await pilot.press("4")
        await asyncio.wait_for(arrived.wait(), 30)
        await settle(again, pilot)
        assert [m.reading for m in loaded] == [False]  # read once: the cache has every file
