"""Conversations from files: ``ovtui commit WORKSPACE FILE.jsonl`` and the watched
``inbox/sessions/`` (a committed file moves to ``inbox/done/``; a bad one to ``inbox/rejected/``
with a ``.reason.txt`` naming the file, line and field; nothing is deleted).

A file holds one message per line in the session API's shape (``role``, ``content`` or ``parts``,
``peer_id?``, ``created_at?``); the session is named after the file (``support-42.jsonl`` →
``support-42``) unless told otherwise.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ovtui.context import RunContext
from ovtui.errors import OvtuiError
from ovtui.events import EventBus
from ovtui.inbox import InboxProcessor
from ovtui.service import Workspace
from ovtui.sessions.commit import CommitOutcome, SessionCommitter
from ovtui.sessions.models import AddMessageRequest, MemoryPolicy, SessionMessage
from ovtui.sessions.store import Archive, SessionError, SessionStore, check_session_id, read_jsonl


def read_conversation(path: Path, sessions: SessionStore) -> list[SessionMessage]:
    shown = path.name
    if not path.is_file():
        raise SessionError(f"{shown}: {'not a file' if path.exists() else 'no such file'}")
    requests = read_jsonl(path, AddMessageRequest, shown=shown)
    messages = [request.to_stored(sessions.next_message_id()) for request in requests]
    if not messages:
        raise SessionError(f"{shown}: no messages")
    return messages


async def commit_messages(
    committer: SessionCommitter, session_id: str, messages: list[SessionMessage]
) -> CommitOutcome:
    sessions = committer.sessions

    def take() -> tuple[Archive, list[SessionMessage], MemoryPolicy]:
        # The session's file lock blocks while another process holds it: in a thread, so the
        # server that also watches the inbox keeps answering.
        sessions.ensure(session_id)
        sessions.append(session_id, messages)
        archive, archived = sessions.archive(session_id)
        return archive, archived, sessions.meta(session_id).policy()

    archive, archived, policy = await asyncio.to_thread(take)
    return await committer.commit_archive(archive, archived, policy)


async def commit_file(workspace: Workspace, path: Path, session_id: str | None = None) -> CommitOutcome:
    sessions = SessionStore(workspace.paths)
    session_id = check_session_id(session_id or path.name.removesuffix(".jsonl"))
    messages = read_conversation(path, sessions)
    committer = SessionCommitter(workspace, sessions, RunContext(None, EventBus(), asyncio.Event()))
    try:
        return await commit_messages(committer, session_id, messages)
    finally:
        await committer.close()


class SessionInbox(InboxProcessor):
    """``inbox/sessions/*.jsonl``: each file committed as a session."""

    FOLDER = "sessions"
    SUFFIX = ".jsonl"

    def __init__(self, committer: SessionCommitter, events: EventBus) -> None:
        super().__init__(committer.workspace.paths, committer.submit_rollout, events)
        self.committer = committer

    async def _handle(self, path: Path) -> None:
        try:
            session_id = check_session_id(path.name.removesuffix(self.SUFFIX))
            messages = read_conversation(path, self.committer.sessions)
        except OvtuiError as exc:
            self.reject(path, str(exc))
            return
        try:
            outcome = await commit_messages(self.committer, session_id, messages)
        except Exception as exc:
            self.reject(path, f"commit failed: {type(exc).__name__}: {exc}")
            return
        try:
            self._move(path, self.done)
        except (OvtuiError, OSError) as exc:
            self.events.log(f"could not move {self.paths.relative(path)} to done/: {exc}", level="error")
        self.processed += 1
        self.events.emit("inbox_processed", file=path.name, errors=outcome.errors)
