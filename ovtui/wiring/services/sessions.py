"""The session half of the agent API, for one server (``ovtui serve``, ``ovtui mcp``): create, read,
list and configure a session, add messages, commit, resubmit an archive, and the commits' tasks
(``commit_tasks``), with OpenViking 0.5.2's semantics: a missing session is created by its first
message; a commit of a session never created is a 404; one with nothing outside the kept window
is ``skipped``; a session with an ``auto_commit_policy`` is committed by the message write that
takes its pending tokens or live message count past a threshold.

A commit archives at once (phase 1) and runs phase 2 as a task of the server's pool.
``recoverable`` says whether this server's task store is the one ``ovtui serve`` recovers at its
start: ``ovtui mcp`` over stdio keeps its tasks in a store of its own, so its archives are recorded
as local commits, which a starting server leaves alone (it would run a commit the stdio process is
still running).

Every store call runs through ``SessionCalls`` (a worker thread, never waiting for a lock in a
shared one). The answers are plain results; the routes and the MCP tools shape them for the wire.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ovtui.sessions.calls import SessionCalls
from ovtui.sessions.store import Committed, SessionError, Skipped, check_session_id
from ovtui.storage.job_pool import PoolFull
from ovtui.wiring.services.commit_tasks import TASK_PREFIX, CommitTasks, Notices

if TYPE_CHECKING:
    from pathlib import Path

    from ovtui.core.context import RunContext
    from ovtui.protocols.sessions import AddMessageRequest, AutoCommitPolicy, MemoryPolicy, SessionMeta
    from ovtui.sessions.inbox import SessionInbox
    from ovtui.sessions.store import LiveState
    from ovtui.storage.jobs import Job
    from ovtui.wiring.composition import Composition

# OpenViking's memory types that ovtui never extracts: a policy naming them is accepted (they are
# simply never written); any other name not declared in the workspace is a mistake, named.
OPENVIKING_ONLY_TYPES = frozenset({"patterns", "tools", "skills"})

Unchanged = Literal["unchanged"]  # a policy the request did not name: the session keeps its own


@dataclass(frozen=True)
class SessionRead:
    """A session as it stands, with its URI and the names of its archives, oldest first."""

    state: LiveState
    uri: str
    archives: list[str]


@dataclass(frozen=True)
class ListedSession:
    session_id: str
    uri: str
    modified: float  # its folder's modification time (seconds since the epoch)


@dataclass(frozen=True)
class Accepted:
    """A commit archived (phase 1), its phase 2 the task ``job``."""

    session_id: str
    task_id: str
    archive_uri: str
    job: Job


@dataclass(frozen=True)
class NotCommitted:
    """A commit that archived nothing: ``no_messages`` or ``all_within_keep_window``."""

    session_id: str
    reason: str


@dataclass(frozen=True)
class StillRunning:
    """An archive handed in again while its task ``task_id`` still runs."""

    archive: str
    task_id: str


@dataclass(frozen=True)
class Added:
    """Messages stored, and the automatic commit they made due (None: none made)."""

    session_id: str
    message_count: int
    pending_tokens: int
    added: int
    auto_commit: Accepted | None


def check_memory_types(policy: MemoryPolicy | None, declared: list[str]) -> None:
    known = {*declared, *OPENVIKING_ONLY_TYPES}
    unknown = [t for t in (policy.memory_types if policy else None) or [] if t not in known]
    if unknown:
        raise SessionError(
            f"memory_policy.memory_types: unknown type(s) {', '.join(map(repr, unknown))} "
            f"(declared: {', '.join(sorted(declared))})"
        )


class Sessions:
    def __init__(
        self,
        parts: Composition,
        run: RunContext,
        *,
        tasks_folder: Path | None = None,
        recoverable: bool = True,
        workers: int = 4,
        announce: Callable[[str], None] | None = None,
    ) -> None:
        """``run``: the server's (its events are the server's log); ``tasks_folder``: where its
        task store lives (default: the workspace's state folder); ``announce``: a line per
        finished commit for the person who started the server."""
        self._parts = parts
        self._store = store = parts.sessions
        self._asked: Literal["api", "local"] = "api" if recoverable else "local"
        self._automatic: Literal["auto", "local"] = "auto" if recoverable else "local"
        self.notices = notices = Notices(run.events, announce)
        self._calls = SessionCalls()
        jobs = parts.session_tasks(tasks_folder, prefix=TASK_PREFIX)
        committer = parts.session_committer(run)
        self.tasks = CommitTasks(store, jobs, committer, self._calls, notices, workers=workers)
        store.on_wait = lambda session_id: notices.say(
            f"session {session_id!r} is locked by another process: waiting for it"
        )
        store.on_notice = jobs.on_log_error = notices.say

    @property
    def user(self) -> str:
        """Whose sessions these are: the workspace's user."""
        return self._parts.paths.user

    def uri(self, session_id: str) -> str:
        return self._store.uri(session_id)

    # --- sessions ------------------------------------------------------------------------------------
    async def create(
        self,
        session_id: str | None,
        memory_policy: MemoryPolicy | None,
        auto_commit: AutoCommitPolicy | Unchanged | None = "unchanged",
    ) -> SessionMeta:
        """A new session (a new id when none is given); an id that exists is refused as
        OpenViking refuses it (409 ``ALREADY_EXISTS``), and so is a memory type the workspace
        does not declare."""
        check_memory_types(memory_policy, self._parts.store.registry.browse_order())
        store = self._store
        return await self._calls.run(
            lambda: store.create(session_id, memory_policy, auto_commit, exclusive=True)
        )

    async def read(self, session_id: str, *, auto_create: bool = False) -> SessionRead:
        """A session as it stands (``auto_create``: a missing one is created first)."""
        sessions = self._store

        def read() -> SessionRead:
            if auto_create:
                sessions.ensure(session_id)
            state = sessions.live(session_id)
            named = state.meta.session_id
            return SessionRead(state, sessions.uri(named), [a.name for a in sessions.archives(named)])

        return await self._calls.run(read)

    async def listed(self) -> list[ListedSession]:
        """Every session, by id (one deleted while listing is left out)."""
        sessions = self._store

        def listed() -> list[ListedSession]:
            found = []
            for session_id in sessions.list_ids():
                try:
                    modified = os.stat(sessions.folder(session_id)).st_mtime
                except FileNotFoundError:
                    continue
                found.append(ListedSession(session_id, sessions.uri(session_id), modified))
            return found

        return await self._calls.run(listed)

    async def configure(
        self, session_id: str, auto_commit: AutoCommitPolicy | Unchanged | None
    ) -> SessionMeta:
        """Set (None: turn off) the session's automatic commits; ``unchanged``: read it only."""
        if auto_commit == "unchanged":
            return await self._calls.run(self._store.meta, session_id)
        return await self._calls.run(self._store.configure, session_id, auto_commit)

    async def require(self, session_id: str | None) -> str | None:
        """A session id checked by the one name rule, and that the session exists (NOT_FOUND)."""
        if session_id is None:
            return None
        checked = check_session_id(session_id)
        if not await asyncio.to_thread(self._store.exists, checked):
            raise SessionError(f"session {checked!r} not found", code="NOT_FOUND")
        return checked

    # --- messages and commits ---------------------------------------------------------------------
    async def add(self, session_id: str, requests: list[AddMessageRequest]) -> Added:
        """Store the messages (a missing session is created by them), then commit the session if
        its policy says the write made that due."""
        sessions = self._store
        stored = [m for r in requests for m in r.stored_messages(sessions.next_message_id)]
        state = await self._calls.run(sessions.append, session_id, stored)
        committed = await self._auto_commit(state)
        return Added(session_id, state.message_count, state.pending_tokens, len(stored), committed)

    async def _auto_commit(self, state: LiveState) -> Accepted | None:
        policy = state.meta.auto_commit_policy
        session_id = state.meta.session_id
        if policy is None or not state.auto_commit_due(policy) or self.tasks.running_for(session_id):
            return None
        sessions, tasks = self._store, self.tasks
        try:
            tasks.pool.check_room()
            task_id = tasks.jobs.new_id()
            done = await self._calls.run(
                lambda: sessions.commit(
                    session_id,
                    keep_recent_count=policy.keep_recent_count,
                    task_id=task_id,
                    origin=self._automatic,
                    when=lambda now: now.auto_commit_due(policy),
                )
            )
        except (SessionError, PoolFull) as exc:  # the messages are stored; the next write tries again
            self.notices.say(f"session {session_id!r}: automatic commit not made: {exc}")
            return None
        if not isinstance(done, Committed):
            return None
        return self._started(session_id, done, task_id)

    async def commit(self, session_id: str, keep_recent_count: int) -> Accepted | NotCommitted:
        """Phase 1 now, phase 2 as a task; ``PoolFull`` when the pool takes no more."""
        sessions, tasks = self._store, self.tasks
        tasks.pool.check_room()
        task_id = tasks.jobs.new_id()
        done = await self._calls.run(
            lambda: sessions.commit(
                session_id, keep_recent_count=keep_recent_count, task_id=task_id, origin=self._asked
            )
        )
        if isinstance(done, Skipped):
            return NotCommitted(session_id, done.reason)
        return self._started(session_id, done, task_id)

    def _started(self, session_id: str, done: Committed, task_id: str) -> Accepted:
        job = self.tasks.start(done.archive, done.messages, done.record.policy(), task_id)
        return Accepted(session_id, task_id, done.archive.uri, job)

    async def resubmit(self, session_id: str, archive_name: str) -> Accepted | StillRunning:
        """Commit again an archive whose task failed or was interrupted (its memories unwritten);
        ``PoolFull`` when the pool takes no more."""
        sessions, tasks = self._store, self.tasks
        archive = await self._calls.run(sessions.archive_named, session_id, archive_name)
        running = tasks.running_of(archive)
        if running:
            return StillRunning(archive_name, running[0])
        tasks.pool.check_room()
        task_id = tasks.jobs.new_id()
        record = await self._calls.run(sessions.resubmit, archive, task_id)
        messages = await self._calls.run(sessions.messages, session_id, archive)
        job = tasks.start(archive, messages, record.policy(), task_id)
        return Accepted(session_id, task_id, archive.uri, job)

    def inbox(self) -> SessionInbox:
        """``inbox/sessions/``: each conversation file dropped there committed by this server."""
        from ovtui.sessions.inbox import SessionInbox

        return SessionInbox(self._parts.paths, self.tasks.committer, self.notices.events)

    async def close(self) -> None:
        """Cancel the tasks still running, then close the threads, the committer and the task store."""
        await self.tasks.close()
        self._calls.close()
        await self.tasks.committer.close()
        self.tasks.jobs.close()
