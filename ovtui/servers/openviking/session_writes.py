"""Adding messages to a session and committing it: what the session routes and the MCP tools both
do, with OpenViking 0.5.2's semantics (a missing session is created by its first message; a commit
of a session never created is a 404; one with nothing outside the kept window is ``skipped``; a
session with an ``auto_commit_policy`` is committed by the write that makes it due).

A commit archives at once (phase 1) and runs phase 2 as a task of the server's pool. ``recoverable``
says whether this server's task store is the one ``ovtui serve`` recovers at its start: ``ovtui mcp``
over stdio keeps its tasks in a store of its own, so its archives are recorded as local commits,
which a starting server leaves alone (it would run a commit the stdio process is still running).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ovtui.protocols.sessions import AddMessageRequest
from ovtui.servers.base.pool import PoolFull
from ovtui.servers.openviking.commit_tasks import CommitTasks
from ovtui.servers.openviking.parts import ServerParts
from ovtui.sessions.store import Committed, LiveState, SessionError, Skipped
from ovtui.storage.jobs import Job


def skipped_body(session_id: str, reason: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "status": "skipped",
        "task_id": None,
        "archive_uri": None,
        "archived": False,
        "effective_enable_working_memory": False,
        "reason": reason,
        "trace_id": "",
        **({"estimated_active_tokens": 0, "budget_exceeded": False} if reason != "no_messages" else {}),
    }


def accepted_body(session_id: str, task_id: str, archive_uri: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "status": "accepted",
        "task_id": task_id,
        "archive_uri": archive_uri,
        "archived": True,
        "effective_enable_working_memory": False,  # ovtui keeps no working memory
        "trace_id": "",
        "estimated_active_tokens": 0,  # OpenViking's turn-budget retention: not ovtui's
        "budget_exceeded": False,
    }


@dataclass(frozen=True)
class CommitAnswer:
    """A commit's answer body, and its task (None: skipped)."""

    body: dict[str, Any]
    job: Job | None


class SessionWrites:
    def __init__(self, parts: ServerParts, commits: CommitTasks, *, recoverable: bool = True) -> None:
        self.parts, self.commits = parts, commits
        self._asked: Literal["api", "local"] = "api" if recoverable else "local"
        self._automatic: Literal["auto", "local"] = "auto" if recoverable else "local"

    async def _auto_commit(self, state: LiveState) -> dict[str, Any] | None:
        """The commit a message write makes when the session's policy says it is due."""
        parts, sessions = self.parts, self.parts.sessions
        policy = state.meta.auto_commit_policy
        session_id = state.meta.session_id
        if policy is None or not state.auto_commit_due(policy) or self.commits.running_for(session_id):
            return None
        try:
            parts.pool.check_room()
            task_id = parts.tasks.new_id()
            done = await parts.calls.run(
                lambda: sessions.commit(
                    session_id,
                    keep_recent_count=policy.keep_recent_count,
                    task_id=task_id,
                    origin=self._automatic,
                    when=lambda now: now.auto_commit_due(policy),
                )
            )
        except (SessionError, PoolFull) as exc:  # the messages are stored; the next write tries again
            parts.say(f"session {session_id!r}: automatic commit not made: {exc}")
            return None
        if not isinstance(done, Committed):
            return None
        self.commits.start(done.archive, done.messages, done.record.policy(), task_id)
        return {"task_id": task_id, "archive_uri": done.archive.uri}

    async def add(self, session_id: str, requests: list[AddMessageRequest]) -> dict[str, Any]:
        sessions = self.parts.sessions
        stored = [m for r in requests for m in r.stored_messages(sessions.next_message_id)]
        state = await self.parts.calls.run(sessions.append, session_id, stored)
        body = {
            "session_id": session_id,
            "message_count": state.message_count,
            "pending_tokens": state.pending_tokens,
            "added": len(stored),
        }
        committed = await self._auto_commit(state)
        return {**body, **({"auto_commit": committed} if committed else {})}

    async def commit(self, session_id: str, keep_recent_count: int) -> CommitAnswer:
        """Phase 1 now, phase 2 as a task; ``PoolFull`` when the pool takes no more."""
        parts, sessions = self.parts, self.parts.sessions
        parts.pool.check_room()
        task_id = parts.tasks.new_id()
        done = await parts.calls.run(
            lambda: sessions.commit(
                session_id, keep_recent_count=keep_recent_count, task_id=task_id, origin=self._asked
            )
        )
        if isinstance(done, Skipped):
            return CommitAnswer(skipped_body(session_id, done.reason), None)
        job = self.commits.start(done.archive, done.messages, done.record.policy(), task_id)
        return CommitAnswer(accepted_body(session_id, task_id, done.archive.uri), job)
