"""A key pressed on History while its full listing is still being read is kept when the listing
lands: the cursor stays on the row the key moved it to, not on the record shown before."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from app_support import MakeApp, settle
from textual.message import Message

from ovtui.app.screens.history import HistoryScreen
from ovtui.app.widgets.vim_table import VimTable
from ovtui.testing.big_workspace import write_history
from ovtui.wiring.workspace import Workspace

RELEASE_S = 10  # a bound on each wait: the test fails, it never hangs


async def test_a_key_pressed_while_the_listing_is_read_survives_the_listing(
    workspace: Workspace, make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_history(workspace.root, 200)
    workspace = Workspace(workspace.root)
    listing, records = threading.Event(), threading.Event()
    records.set()  # the first record (under the cursor at once) opens as usual
    history, history_record = workspace.reading.history, workspace.reading.history_record

    def held_history(*args: Any, **kwargs: Any) -> Any:
        assert listing.wait(RELEASE_S)
        return history(*args, **kwargs)

    def held_record(*args: Any, **kwargs: Any) -> Any:
        assert records.wait(RELEASE_S)
        return history_record(*args, **kwargs)

    monkeypatch.setattr(workspace.reading, "history", held_history)
    monkeypatch.setattr(workspace.reading, "history_record", held_record)
    listed: list[Message] = []

    def hook(message: Message) -> None:
        if isinstance(message, HistoryScreen.Listed):
            listed.append(message)

    app = make_app(workspace)
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await pilot.press("3")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        table = screen.query_one("#records", VimTable)
        while screen.record_id is None:  # the newest record, shown from the preview
            await pilot.pause()
        first = screen.record_id
        assert table.selected_key == first and not listed

        records.clear()  # the next record is still being read when the listing lands
        await pilot.press("j")
        second = table.selected_key
        assert table.cursor_row == 1 and second != first

        listing.set()
        while not listed:
            await pilot.pause()
        await pilot.pause()
        assert table.row_count == 200
        assert table.selected_key == second and table.cursor_row == 1  # not back on `first`

        records.set()
        await settle(app, pilot)
        assert screen.record_id == second
