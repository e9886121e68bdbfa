"""``ovtui serve``: the OpenViking-compatible API of one workspace, on the one server base.

A commit archives at once (phase 1, before the answer) and runs phase 2 as a background task of
the server's file-backed job store: ``GET /api/v1/tasks/{id}`` says pending → running →
completed | failed; a task a crash interrupted reads failed after a restart, its archive kept.
Conversations dropped into ``inbox/sessions/`` are committed while the server runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from ovtui.core.context import RunContext
from ovtui.core.events import EventBus
from ovtui.servers.base.app import create_app
from ovtui.servers.openviking.envelope import answer_errors_in_the_envelope
from ovtui.servers.openviking.evolution import evolution_router
from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.sessions import sessions_router
from ovtui.servers.openviking.tasks import TASK_PREFIX, tasks_router
from ovtui.wiring.workspace import Workspace, run_stamp


def create_session_app(
    workspace: Workspace,
    *,
    api_key: str | None = None,
    workers: int = 4,
    state: Any = None,
    watch_inbox: bool = True,
) -> FastAPI:
    run_id = run_stamp()
    log = workspace.event_log(run_id)
    events = EventBus([log])

    def waiting(session_id: str) -> None:
        events.log(f"session {session_id!r} is locked by another process: waiting for it", level="warning")

    sessions = workspace.session_store(on_wait=waiting)
    parts = ServerParts(
        workspace=workspace,
        sessions=sessions,
        committer=workspace.session_committer(sessions, RunContext(run_id, events, asyncio.Event())),
        tasks=workspace.session_tasks(state, prefix=TASK_PREFIX),
        events=events,
        workers=workers,
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
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
        return {"workspace": workspace.root.name, "pending_tasks": parts.pending_tasks}

    app = create_app("ovtui sessions", api_key=api_key, health=health, lifespan=lifespan)
    answer_errors_in_the_envelope(app)
    app.include_router(sessions_router(parts))
    app.include_router(tasks_router(parts))
    app.include_router(evolution_router(parts))
    app.state.parts = parts
    app.state.sessions = sessions
    app.state.committer = parts.committer
    app.state.events = events
    return app
