"""``ovtui serve``: the OpenViking-compatible API of one workspace, on the one server base.

A commit archives at once (phase 1, before the answer; the archive names its task) and runs
phase 2 as a background task of the server's file-backed job store: ``GET /api/v1/tasks/{id}``
says pending → running → completed | failed. At its start the server gives every archive its task
(``commit_tasks``): one never recorded is queued, one a crash interrupted reads failed with the
route that resubmits it. Conversations dropped into ``inbox/sessions/`` are committed while the
server runs. ``/health`` says the server is up and how many tasks it runs, nothing of the workspace. ``/mcp``
serves the MCP tools (``mcp_tools``) over streamable HTTP, stateless (each request its own
transport: many agents share one server), behind the same key as the routes.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from starlette.routing import Route

from ovtui.servers.base.app import create_app
from ovtui.servers.openviking.commit_tasks import CommitTasks
from ovtui.servers.openviking.content import content_router
from ovtui.servers.openviking.envelope import answer_errors_in_the_envelope
from ovtui.servers.openviking.evolution import evolution_router
from ovtui.servers.openviking.fs import fs_router
from ovtui.servers.openviking.opening import close_parts, open_parts
from ovtui.servers.openviking.search import search_router
from ovtui.servers.openviking.session_context import session_context_router
from ovtui.servers.openviking.session_writes import SessionWrites
from ovtui.servers.openviking.sessions import sessions_router
from ovtui.servers.openviking.tasks import tasks_router
from ovtui.wiring.workspace import Workspace

MCP_PATH = "/mcp"  # exactly: a mount would answer POST /mcp with a redirect to /mcp/


def create_session_app(
    workspace: Workspace,
    *,
    api_key: str | None = None,
    workers: int = 4,
    state: Any = None,
    watch_inbox: bool = True,
    host: str = "127.0.0.1",
    announce: Callable[[str], None] | None = None,
) -> FastAPI:
    """``host``: where the server listens; on loopback, ``/mcp`` answers only requests whose Host
    header names loopback (DNS rebinding), anywhere else the key guards it like every route.
    ``announce`` hears a line per finished commit (the server's log on its output)."""
    from ovtui.servers.openviking.mcp_tools import MemoryServer, streamable_http

    parts, log = open_parts(workspace, state=state, workers=workers)
    parts.announce = announce
    commits = CommitTasks(parts)
    writes = SessionWrites(parts, commits)
    mcp = MemoryServer(parts, writes)
    mcp_endpoint = streamable_http(mcp, host)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await commits.recover()
        stop = asyncio.Event()
        inbox = workspace.session_inbox(parts.committer, parts.events)
        watcher = asyncio.create_task(inbox.watch(stop)) if watch_inbox else None
        try:
            async with mcp.session_manager.run():  # a mounted app's own lifespan is never run
                yield
        finally:
            stop.set()
            if watcher is not None:
                await asyncio.gather(watcher, return_exceptions=True)
                await inbox.drain()
            await close_parts(parts, log)

    def health() -> dict[str, Any]:
        return {"healthy": True, "pending_tasks": parts.pending_tasks}

    app = create_app("ovtui sessions", api_key=api_key, health=health, lifespan=lifespan)
    answer_errors_in_the_envelope(app)
    app.include_router(sessions_router(parts, commits, writes))
    app.include_router(tasks_router(parts))
    app.include_router(search_router(parts))
    app.include_router(content_router(parts))
    app.include_router(fs_router(parts))
    app.include_router(session_context_router(parts))
    app.include_router(evolution_router(parts))
    app.router.routes.append(Route(MCP_PATH, mcp_endpoint, methods=["GET", "POST", "DELETE"]))
    app.state.parts = parts
    app.state.sessions = parts.sessions
    app.state.committer = parts.committer
    app.state.events = parts.events
    return app
