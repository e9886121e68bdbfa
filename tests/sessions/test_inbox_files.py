"""What ``inbox/sessions/`` does with files that are not conversations: quarantined with a reason
naming them (never silently ignored), while files still written under a temporary name are left
alone until renamed into place; through the real watcher of the session server's inbox."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from session_support import CONVERSATION
from workspace_support import INBOX_OTHER_FILES, build_sample_workspace, check_other_files, drop_other_files

from ovtui.core.context import RunContext
from ovtui.core.events import Event, EventBus
from ovtui.wiring.workspace import Workspace


async def test_other_files_are_quarantined_and_partial_ones_left_alone(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    incoming = root / "inbox/sessions"
    incoming.mkdir(parents=True, exist_ok=True)
    (incoming / "chat.json").write_text(json.dumps(CONVERSATION))  # a conversation, but not as JSONL
    workspace = Workspace(root)
    committer = workspace.parts.session_committer(RunContext())
    rejected: list[str] = []
    watching, handled = asyncio.Event(), asyncio.Event()

    def listen(event: Event) -> None:
        message = str(event.data.get("message", ""))
        if event.kind == "log" and message.startswith("rejected "):
            rejected.append(message)
            watching.set()
        if len(rejected) == 1 + len(INBOX_OTHER_FILES) and event.kind == "inbox_processed":
            handled.set()

    inbox = workspace.agent.session_inbox(committer, EventBus([listen]))
    stop = asyncio.Event()
    watcher = asyncio.create_task(inbox.watch(stop))
    await asyncio.wait_for(watching.wait(), timeout=30)  # first scan done; the watch finds the rest
    drop_other_files(incoming)
    temp = incoming / "support-7.jsonl.tmp"
    temp.write_text("".join(json.dumps(m) + "\n" for m in CONVERSATION))
    temp.rename(incoming / "support-7.jsonl")
    await asyncio.wait_for(handled.wait(), timeout=30)
    stop.set()
    await watcher
    await inbox.drain()
    await committer.close()

    quarantine = root / "inbox/rejected"
    check_other_files(incoming, quarantine, takes="inbox/sessions/ takes a conversation per .jsonl file")
    assert json.loads((quarantine / "chat.json").read_text()) == CONVERSATION
    reason = (quarantine / "chat.json.reason.txt").read_text()
    assert reason.startswith("chat.json: not a .jsonl file") and "rename it to end in .jsonl" in reason
    assert any("inbox/sessions/notes.txt" in message for message in rejected)  # the log names the file too
    assert (root / "inbox/done/support-7.jsonl").is_file()
    assert (root / "sessions/support-7/history/archive_001/memory_diff.json").is_file()
    assert not (root / "sessions/chat").exists()
    assert inbox.rejected_count == 1 + len(INBOX_OTHER_FILES) and inbox.processed == 1
