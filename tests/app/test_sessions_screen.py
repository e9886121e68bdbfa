"""The Sessions screen (Pilot): committed sessions, each commit's status and what it extracted, and a
new commit shown when the workspace says sessions changed."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from app_support import MakeApp, screen_text, settle
from cli_support import run_ovtui
from session_support import CONVERSATION
from textual.message import Message

from ovtui.app.messages import SessionsChanged
from ovtui.app.widgets.vim_table import VimTable
from ovtui.protocols.sessions import AddMessageRequest, MemoryPolicy
from ovtui.storage.watching import ChangeKind, classify
from ovtui.wiring.workspace import Workspace


async def commit(workspace: Workspace, tmp: Path, name: str) -> None:
    path = tmp / f"{name}.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in CONVERSATION))
    await workspace.agent.commit(path)


def test_session_files_are_watched() -> None:
    assert classify("sessions/s1/meta.json") is ChangeKind.SESSION
    assert classify("sessions/s1/history/archive_001/memory_diff.json") is ChangeKind.SESSION
    assert classify(".ovtui/tasks/jobs.jsonl") is ChangeKind.SESSION
    assert classify("sessions/s1/lock") is None


async def test_sessions_screen_lists_commits_live(
    sample_workspace: Workspace, make_app: MakeApp, tmp_path: Path
) -> None:
    await commit(sample_workspace, tmp_path, "first-chat")
    app = make_app(sample_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(app, pilot)
        table = app.screen.query_one("#sessions", VimTable)
        assert table.row_count == 1
        text = screen_text(app)
        assert "first-chat" in text and "archive_001" in text
        assert (
            "extracted: 1 case, 2 entities, 1 preference, 1 profile fact"
        )  # counts agree, none of 0 in text
        assert "memory_diff: +" in text

        # A commit while another screen is shown: the watcher's message marks the screen stale and
        # it reloads when shown again (a visible one reloads on a short timer instead).
        screen = app.screen
        await pilot.press("1")
        await commit(sample_workspace, tmp_path, "second-chat")
        screen.post_message(SessionsChanged())
        await settle(app, pilot)
        await pilot.press("5")
        await settle(app, pilot)
        assert table.row_count == 2
        assert "second-chat" in screen_text(app)


async def test_sessions_screen_names_the_peer_of_each_memory(
    sample_workspace: Workspace, make_app: MakeApp, tmp_path: Path
) -> None:
    """A commit with a peer's memories and a peer the session does not allow: the files in alice's
    space are listed with her name, bob's skipped memories with the reason."""
    sample_workspace.parts.sessions.create(
        "peer-chat", MemoryPolicy.model_validate({"peer": {"allowed_peer_ids": ["alice"]}})
    )
    lines = [
        *CONVERSATION,
        {"role": "user", "content": "My name is Alice. I prefer trains.", "peer_id": "alice"},
        {"role": "user", "content": "I prefer ferries.", "peer_id": "bob"},
    ]
    path = tmp_path / "peer-chat.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))
    await sample_workspace.agent.commit(path)
    app = make_app(sample_workspace)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.press("5")
        await settle(app, pilot)
        text = screen_text(app)
        assert "profile.md · peer alice" in text and "preferences/alice/trains.md · peer alice" in text
        assert "peer alice: 2 memories, 2 file(s) written" in text
        assert "skipped peer bob: 1 memory, not in the session's MemoryPolicy" in text


async def test_sessions_screen_reads_at_80_by_24(
    sample_workspace: Workspace, make_app: MakeApp, tmp_path: Path
) -> None:
    """The smallest terminal the app supports: every column of the session list is whole (the task
    state was cut to "co"), and the selected commit's detail is beside it."""
    await commit(sample_workspace, tmp_path, "0123456789abcdef")  # as long as a generated id
    app = make_app(sample_workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("5")
        await settle(app, pilot)
        lines = screen_text(app).splitlines()
        at = next(i for i, line in enumerate(lines) if "session" in line and "live" in line)
        assert "last task" in lines[at]
        row = lines[at + 1]
        assert row.startswith(" ▶ 0123456789abcdef") and "completed" in row
        assert "archive_001" in screen_text(app)


async def test_the_most_recent_session_comes_first_and_the_selection_stays(
    sample_workspace: Workspace, make_app: MakeApp, tmp_path: Path
) -> None:
    """More sessions than rows at 80×24: the newest is on top; a commit to an old one (off-screen,
    and not first by id) brings it to the top when the list refreshes, and the session the person
    selected stays selected, its detail shown."""
    store = sample_workspace.parts.sessions
    ids = [f"s{i:02d}" for i in range(30)]
    past = time.time() - 3600
    for age, session_id in enumerate(ids):  # s00 the oldest, s29 the newest
        store.create(session_id)
        store.append(session_id, [AddMessageRequest(role="user", content="hi").to_stored(f"m{age}")])
        for name in ("meta.json", "messages.jsonl"):
            os.utime(store.folder(session_id) / name, (past + age, past + age))
    filled = asyncio.Event()

    def hook(message: Message) -> None:
        if (
            isinstance(message, VimTable.RowsAdded)
            and message.table.id == "sessions"
            and message.shown == message.total  # every row is in
        ):
            filled.set()

    app = make_app(sample_workspace)
    async with app.run_test(size=(80, 24), message_hook=hook) as pilot:
        await pilot.press("5")
        await asyncio.wait_for(filled.wait(), 30)
        await settle(app, pilot)
        table = app.screen.query_one("#sessions", VimTable)
        assert table.keys == ids[::-1]
        assert "s29" in screen_text(app) and "s05" not in screen_text(app)  # more sessions than rows
        await pilot.press("j", "j")
        await settle(app, pilot)
        assert table.selected_key == "s27"

        filled.clear()
        await commit(sample_workspace, tmp_path, "s05")
        app.screen.post_message(SessionsChanged())  # what the workspace watcher posts
        await asyncio.wait_for(filled.wait(), 30)
        await settle(app, pilot)
        assert table.keys[:4] == ["s05", "s29", "s28", "s27"]
        lines = screen_text(app).splitlines()
        at = next(i for i, line in enumerate(lines) if "session" in line and "live" in line)
        assert lines[at + 1].startswith("   s05") and "completed" in lines[at + 1]
        assert table.selected_key == "s27" and table.cursor_row == 3
        assert "session s27" in screen_text(app)


async def test_a_commit_s_plan_applied_from_the_cli_no_longer_shows_as_waiting(
    sample_workspace: Workspace, make_app: MakeApp, tmp_path: Path
) -> None:
    config = sample_workspace.root / "ovtui.toml"
    config.write_text(config.read_text() + "\n[sessions]\nreview_user_memories = true\n")
    workspace = Workspace(sample_workspace.root)
    before = {p.plan_id for p in workspace.review.pending_plans()}
    await commit(workspace, tmp_path, "parked-chat")
    parked = [p.plan_id for p in workspace.review.pending_plans() if p.plan_id not in before]
    assert parked
    app = make_app(workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        await settle(app, pilot)
        assert "waiting in Review: " in screen_text(app)
        for plan_id in parked:  # decided and applied by another process: the CLI
            for action in ("approve", "apply"):
                proc = run_ovtui("review", action, plan_id, "-w", str(workspace.root), cwd=tmp_path)
                assert proc.returncode == 0, proc.stderr
        await pilot.press("r")
        await settle(app, pilot)
        assert "waiting in Review" not in screen_text(app)
