"""Once-only intake of ``inbox/sessions/``: ``ovtui serve`` SIGKILLed after a file was committed
and before the file moved to done/ does not commit it a second time when the inbox is read again
(real process, real kill), and one killed during the commit commits it again; a commit that
failed can be retried by dropping the file again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from session_support import CONVERSATION
from workspace_support import build_sample_workspace

from ovtui.core.context import RunContext
from ovtui.core.events import Event, EventBus
from ovtui.sessions.inbox import SessionInbox
from ovtui.storage.fsio import CRASH_AT_ENV
from ovtui.wiring.workspace import Workspace

LINES = "".join(json.dumps(m) + "\n" for m in CONVERSATION)


def read_inbox(root: Path) -> tuple[SessionInbox, list[Event]]:
    """Everything in ``inbox/sessions/`` read once, in this process."""
    events: list[Event] = []

    async def run() -> SessionInbox:
        workspace = Workspace(root)
        committer = workspace.parts.session_committer(RunContext())
        inbox = workspace.agent.session_inbox(committer, EventBus([events.append]))
        inbox.scan()
        await inbox.drain()
        await committer.close()
        return inbox

    return asyncio.run(run()), events


def logged(events: list[Event]) -> str:
    return "\n".join(str(e.data.get("message")) for e in events if e.kind == "log")


@pytest.mark.parametrize(
    ("crash_at", "archives_after"),
    [
        ("session_intake_recorded", ["archive_001"]),  # committed, not moved: not committed again
        ("temp:memory_diff.json", ["archive_001", "archive_002"]),  # mid-commit: committed again
    ],
)
def test_a_server_killed_before_moving_the_file_commits_it_once(
    tmp_path: Path, crash_at: str, archives_after: list[str]
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    dropped = root / "inbox/sessions/chat-9.jsonl"
    dropped.write_text(LINES)
    env = {CRASH_AT_ENV: crash_at}
    killed = subprocess.run(
        [sys.executable, "-m", "ovtui", "serve", str(root), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert dropped.is_file()  # killed before the move
    archives = root / "sessions/chat-9/history"
    assert [p.name for p in archives.iterdir()] == ["archive_001"]

    inbox, events = read_inbox(root)
    assert inbox.processed == 1 and inbox.rejected_count == 0
    assert sorted(p.name for p in archives.iterdir()) == archives_after
    assert (archives / archives_after[-1] / "memory_diff.json").is_file()  # one complete commit
    assert (root / "inbox/done/chat-9.jsonl").read_text() == LINES
    assert ("already committed" in logged(events)) == (len(archives_after) == 1)

    # a second copy under the same name is the same conversation; under another name, another one
    (root / "inbox/sessions/chat-9.jsonl").write_text(LINES)
    (root / "inbox/sessions/chat-10.jsonl").write_text(LINES)
    inbox, _ = read_inbox(root)
    assert inbox.processed == 2
    assert sorted(p.name for p in archives.iterdir()) == archives_after
    assert (root / "sessions/chat-10/history/archive_001/memory_diff.json").is_file()


def test_a_failed_commit_can_be_retried_by_dropping_the_file_again(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    with socket.socket() as probe:  # a model endpoint nobody listens on: the extraction fails
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    (root / "ovtui.toml").write_text(
        f'[llm]\nbackend = "openai"\nbase_url = "{closed}"\nmodel = "m"\nmax_retries = 0\ntimeout = 5\n'
    )
    for attempt in (1, 2):
        (root / "inbox/sessions/retry.jsonl").write_text(LINES)
        inbox, events = read_inbox(root)
        assert inbox.rejected_count == 1, logged(events)
        assert "commit failed" in logged(events) and "already committed" not in logged(events)
        assert len(list((root / "sessions/retry/history").iterdir())) == attempt  # archives kept
