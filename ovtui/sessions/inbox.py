"""Conversations from files: ``ovtui commit WORKSPACE FILE.jsonl`` and the watched
``inbox/sessions/`` (a committed file moves to ``inbox/done/``; a bad one, or one that is not a
``.jsonl`` file, to ``inbox/rejected/`` with a ``.reason.txt`` naming the file, line and field;
nothing is deleted; a file still being written under a temporary name is left alone).

A file holds one message per line in the session API's shape (``role``, ``content`` or ``parts``,
``peer_id?``, ``created_at?``, the turn fields), stored as the API stores it (a transport aggregate
split); the session is named after the file (``support-42.jsonl`` → ``support-42``) unless told
otherwise.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from ovtui.core.bounds import MAX_ROLLOUT_BYTES
from ovtui.core.errors import OvtuiError
from ovtui.core.events import EventBus
from ovtui.memory.intake import content_key, record_relpath, was_taken
from ovtui.protocols.sessions import AddMessageRequest, MemoryPolicy, SessionMessage, now_iso
from ovtui.sessions.commit import CommitOutcome, SessionCommitter
from ovtui.sessions.session_files import read_jsonl
from ovtui.sessions.store import Archive, SessionError, SessionStore, check_session_id
from ovtui.storage import fsio
from ovtui.storage.paths import WorkspacePaths
from ovtui.storage.reading import read_bounded
from ovtui.train.inbox import InboxProcessor


def record_intake(paths: WorkspacePaths, key: str, source: str, archive_uri: str) -> None:
    """An inbox file's content was committed as ``archive_uri`` (its memory_diff written): a server
    that restarts before moving the file (or a second copy of it) finds this and does not commit it
    again. A crash before it (during the commit) commits the file again at the restart, into the
    next archive; the interrupted one stays, as an interrupted task's does."""
    record = {"sha256": key, "file": source, "taken_at": now_iso(), "archive_uri": archive_uri}
    fsio.atomic_write_text(paths.root / record_relpath(key), json.dumps(record, indent=1), root=paths.root)
    fsio.crash_point("session_intake_recorded")


def read_conversation(path: Path, sessions: SessionStore) -> list[SessionMessage]:
    shown = path.name
    if not path.is_file():
        raise SessionError(f"{shown}: {'not a file' if path.exists() else 'no such file'}")
    requests = read_jsonl(path, AddMessageRequest, shown=shown)
    messages = [m for request in requests for m in request.stored_messages(sessions.next_message_id)]
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


def session_of(path: Path, session_id: str | None = None) -> str:
    """The session a conversation file commits to: ``session_id``, else the file's name."""
    return check_session_id(session_id or path.name.removesuffix(SessionInbox.SUFFIX))


class SessionInbox(InboxProcessor):
    """``inbox/sessions/*.jsonl``: each file committed as a session."""

    FOLDER = "sessions"
    SUFFIX = ".jsonl"
    TAKES = "a conversation per .jsonl file, a message per line; a Rollout (.json) goes to inbox/rollouts/"

    def __init__(self, paths: WorkspacePaths, committer: SessionCommitter, events: EventBus) -> None:
        super().__init__(paths, committer.submit_rollout, events)
        self.committer = committer

    async def _train(self, path: Path) -> None:  # the base's _handle reports progress after it
        try:
            session_id = session_of(path)
            data = read_bounded(path, MAX_ROLLOUT_BYTES, what="the file", shown=path.name)
            key = content_key(path.name.encode() + b"\0" + data)  # this session's conversation
            messages = read_conversation(path, self.committer.sessions)
        except OvtuiError as exc:
            self.reject(path, str(exc))
            return
        except OSError as exc:
            self.reject(path, f"cannot read: {exc}")
            return
        if was_taken(self.paths, key):  # committed before a crash, not moved yet; or a second copy
            self._finish(path, [], note="already committed (the same content); not committed again")
            return
        try:
            outcome = await commit_messages(self.committer, session_id, messages)
        except Exception as exc:  # the archive stays, as a failed task's does; drop it again to retry
            self.reject(path, f"commit failed: {type(exc).__name__}: {exc}")
            return
        record_intake(self.paths, key, path.name, outcome.archive.uri)
        self._finish(path, outcome.errors)
