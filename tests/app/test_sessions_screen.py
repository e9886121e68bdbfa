"""The Sessions screen (Pilot): committed sessions, each commit's status and what it extracted, and a
new commit shown when the workspace says sessions changed."""

from __future__ import annotations

import json
from pathlib import Path

from app_support import MakeApp, screen_text, settle
from session_support import CONVERSATION

from ovtui.app.messages import SessionsChanged
from ovtui.app.widgets.vim_table import VimTable
from ovtui.service import Workspace
from ovtui.sessions.ingest import commit_file
from ovtui.sessions.models import MemoryPolicy
from ovtui.sessions.store import SessionStore
from ovtui.workspace.watching import ChangeKind, classify


async def commit(workspace: Workspace, tmp: Path, name: str) -> None:
    path = tmp / f"{name}.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in CONVERSATION))
    await commit_file(workspace, path)


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
        assert "extracted: 1 cases, 2 entities, 1 preferences, 1 profile" in text
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
    SessionStore(sample_workspace.paths).create(
        "peer-chat", MemoryPolicy.model_validate({"peer": {"allowed_peer_ids": ["alice"]}})
    )
    lines = [
        *CONVERSATION,
        {"role": "user", "content": "My name is Alice. I prefer trains.", "peer_id": "alice"},
        {"role": "user", "content": "I prefer ferries.", "peer_id": "bob"},
    ]
    path = tmp_path / "peer-chat.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in lines))
    await commit_file(sample_workspace, path)
    app = make_app(sample_workspace)
    async with app.run_test(size=(140, 50)) as pilot:
        await pilot.press("5")
        await settle(app, pilot)
        text = screen_text(app)
        assert "profile.md · peer alice" in text and "preferences/trains.md · peer alice" in text
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
        assert row.startswith(" 0123456789abcdef") and "completed" in row
        assert "archive_001" in screen_text(app)
