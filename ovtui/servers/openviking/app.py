"""``ovtui serve``: the OpenViking-compatible API of one workspace, on the one server base.

A commit archives at once (phase 1, before the answer; the archive names its task) and runs
phase 2 as a background task of the server's file-backed job store: ``GET /api/v1/tasks/{id}``
says pending → running → completed | failed. At its start the server gives every archive its task
(``commit_tasks``): one never recorded is queued, one a crash interrupted reads failed with the
route that resubmits it. Conversations dropped into ``inbox/sessions/`` are committed while the
server runs. ``/health`` says the server is up and how many tasks it runs, nothing of the workspace.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from ovtui.core.context import RunContext
from ovtui.core.events import EventBus
from ovtui.servers.base.app import create_app
from ovtui.servers.openviking.commit_tasks import TASK_PREFIX, CommitTasks
from ovtui.servers.openviking.content import content_router
from ovtui.servers.openviking.envelope import answer_errors_in_the_envelope
from ovtui.servers.openviking.evolution import evolution_router
from ovtui.servers.openviking.fs import fs_router
from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.search import search_router
from ovtui.servers.openviking.session_context import session_context_router
from ovtui.servers.openviking.sessions import sessions_router
from ovtui.servers.openviking.tasks import tasks_router
from ovtui.wiring.workspace import Workspace, run_stamp


def create_session_app(
    workspace: Workspace,
    *,
    api_key: str | None = None,
    workers: int = 4,
    state: Any = None,
    watch_inbox: bool = True,
    announce: Callable[[str], None] | None = None,
) -> FastAPI:
    """The app; ``announce`` hears a line per finished commit (the server's log on its output)."""
    run_id = run_stamp()
    log = workspace.event_log(run_id)
    events = EventBus([log])

    sessions = workspace.session_store()
    tasks = workspace.session_tasks(state, prefix=TASK_PREFIX)
    parts = ServerParts(
        workspace=workspace,
        sessions=sessions,
        committer=workspace.session_committer(sessions, RunContext(run_id, events, asyncio.Event())),
        tasks=tasks,
        events=events,
        workers=workers,
        announce=announce,
    )
    sessions.on_wait = lambda session_id: parts.say(
        f"session {session_id!r} is locked by another process: waiting for it"
    )
    sessions.on_notice = tasks.on_log_error = parts.say

    commits = CommitTasks(parts)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await commits.recover()
        stop = asyncio.Event()
        inbox = workspace.session_inbox(parts.committer, events)
        watcher = asyncio.create_task(inbox.watch(stop)) if watch_inbox else None
        try:
            yield
        finally:
            stop.set()
            if watcher is not None:
                await asyncio.gather(watcher, return_exceptions=True)
                await inbox.drain()
            await parts.close()
            await parts.committer.close()
            parts.tasks.close()
            log.close()

    def health() -> dict[str, Any]:
        return {"healthy": True, "pending_tasks": parts.pending_tasks}

    app = create_app("ovtui sessions", api_key=api_key, health=health, lifespan=lifespan)
    answer_errors_in_the_envelope(app)
    app.include_router(sessions_router(parts, commits))
    app.include_router(tasks_router(parts))
    app.include_router(search_router(parts))
    app.include_router(content_router(parts))
    app.include_router(fs_router(parts))
    app.include_router(session_context_router(parts))
    app.include_router(evolution_router(parts))
    app.state.parts = parts
    app.state.sessions = sessions
    app.state.committer = parts.committer
    app.state.events = events
    return app
