"""``ovtui serve``: the OpenViking-compatible API of one workspace, on the one server base.

A commit archives at once (phase 1, before the answer; the archive names its task) and runs
phase 2 as a background task of the server's file-backed job store: ``GET /api/v1/tasks/{id}``
says pending → running → completed | failed. At its start the server gives every archive its task
(``wiring.services.commit_tasks``): one never recorded is queued, one a crash interrupted reads
failed with the route that resubmits it. Conversations dropped into ``inbox/sessions/`` are
committed while the server runs. ``/health`` says the server is up and how many tasks it runs,
nothing of the workspace. ``/mcp`` serves the MCP tools (``mcp_tools``) over streamable HTTP,
stateless (each request its own transport: many agents share one server), behind the same key as
the routes. The MCP server, and the SDK it is built on, are loaded on the first ``/mcp`` request
(``McpOnFirstUse``): a server no agent speaks MCP to starts without them (they are most of its
start's CPU).
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from ovtui.servers.base.app import create_app, error_body, send_error
from ovtui.servers.openviking.content import content_router
from ovtui.servers.openviking.content_write import content_write_router
from ovtui.servers.openviking.envelope import answer_errors_in_the_envelope
from ovtui.servers.openviking.evolution import evolution_router
from ovtui.servers.openviking.fs import fs_router
from ovtui.servers.openviking.opening import close_parts, open_parts
from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.resources import resources_router
from ovtui.servers.openviking.search import search_router
from ovtui.servers.openviking.session_context import session_context_router
from ovtui.servers.openviking.sessions import sessions_router
from ovtui.servers.openviking.system import auth_mode, system_router
from ovtui.servers.openviking.tasks import tasks_router
from ovtui.servers.openviking.tenancy import UserSpaces
from ovtui.wiring.user_spaces import open_user_space
from ovtui.wiring.workspace import Workspace

if TYPE_CHECKING:
    from ovtui.servers.openviking.mcp_tools import MemoryServer

MCP_PATH = "/mcp"  # exactly: a mount would answer POST /mcp with a redirect to /mcp/
MCP_TOOLS = "ovtui.servers.openviking.mcp_tools"
USERS_STATE = "users"  # under a server's --state: each other user's task store
CLOSED_BODY = error_body("UNAVAILABLE", "the server is stopping: MCP is closed")


def mcp_server(parts: ServerParts, host: str) -> tuple[MemoryServer, ASGIApp]:
    """The MCP server of these parts and its streamable HTTP endpoint (the SDK loads here)."""
    from ovtui.servers.openviking.mcp_tools import MemoryServer, streamable_http

    server = MemoryServer(parts)
    return server, streamable_http(server, host)


class McpOnFirstUse:
    """The ``/mcp`` endpoint, built on its first request, once (concurrent first requests wait on
    one build). Its session manager runs in a task of its own from then to ``close``: the manager
    holds a task group, which must be left by the task that entered it, and a request's task ends
    with the request."""

    def __init__(self, parts: ServerParts, host: str) -> None:
        self._parts, self._host = parts, host
        self._lock = asyncio.Lock()
        self._closing = asyncio.Event()
        self._endpoint: ASGIApp | None = None
        self._manager: asyncio.Task[None] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = None if self._closing.is_set() else self._endpoint or await self._started()
        if endpoint is None:  # the server is stopping: its session manager is gone or going
            await send_error(send, 503, CLOSED_BODY)
            return
        await endpoint(scope, receive, send)

    async def _started(self) -> ASGIApp | None:
        async with self._lock:
            if self._endpoint is None and not self._closing.is_set():
                # The SDK's import is seconds of CPU: in a thread, the other routes answer meanwhile.
                await asyncio.to_thread(importlib.import_module, MCP_TOOLS)
                server, endpoint = mcp_server(self._parts, self._host)
                running = asyncio.Event()
                manager = asyncio.create_task(self._run_manager(server, running))
                waiting = asyncio.create_task(running.wait())
                await asyncio.wait([manager, waiting], return_when=asyncio.FIRST_COMPLETED)
                waiting.cancel()
                if manager.done():
                    manager.result()  # it could not start: why, to this request (the next one tries again)
                self._manager, self._endpoint = manager, endpoint
            return self._endpoint

    async def _run_manager(self, server: MemoryServer, running: asyncio.Event) -> None:
        async with server.session_manager.run():
            running.set()
            await self._closing.wait()

    async def close(self) -> None:
        """Stop the session manager (its requests' tasks end with it); a later request is refused."""
        async with self._lock:
            self._closing.set()
        if self._manager is not None:
            await self._manager


def _told_as(user: str, announce: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """``announce`` with each line naming the user whose space it is about."""
    if announce is None:
        return None
    told = announce
    return lambda line: told(f"user {user}: {line}")


def create_session_app(
    workspace: Workspace,
    *,
    api_key: str | None = None,
    workers: int = 4,
    state: Path | None = None,
    watch_inbox: bool = True,
    host: str = "127.0.0.1",
    announce: Callable[[str], None] | None = None,
) -> FastAPI:
    """``host``: where the server listens; on loopback, ``/mcp`` answers only requests whose Host
    header names loopback (DNS rebinding), anywhere else the key guards it like every route.
    ``announce`` hears a line per finished commit (the server's log on its output)."""
    parts = open_parts(workspace, state=state, workers=workers, announce=announce)
    mcp = McpOnFirstUse(parts, host)
    # Each other user's space is served by routes of its own, opened and closed with these.
    spaces = {
        user: create_session_app(
            open_user_space(workspace, user),
            api_key=api_key,
            workers=workers,
            state=state / USERS_STATE / user if state is not None else None,
            watch_inbox=watch_inbox,
            host=host,
            announce=_told_as(user, announce),
        )
        for user in workspace.config.workspace.users
    }

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as users:
            for space in spaces.values():
                await users.enter_async_context(space.router.lifespan_context(space))
            async with own_lifespan():
                yield

    @asynccontextmanager
    async def own_lifespan() -> AsyncIterator[None]:
        await parts.sessions.tasks.recover()
        stop = asyncio.Event()
        inbox = parts.sessions.inbox()
        watcher = asyncio.create_task(inbox.watch(stop)) if watch_inbox else None
        try:
            yield
        finally:
            try:
                await mcp.close()  # first: its tools' requests end before the parts they use
            finally:
                stop.set()
                if watcher is not None:
                    await asyncio.gather(watcher, return_exceptions=True)
                    await inbox.drain()
                await close_parts(parts)

    def health() -> dict[str, Any]:
        return {
            "healthy": True,
            "auth_mode": auth_mode(api_key),
            "pending_tasks": parts.sessions.tasks.pending,
        }

    app = create_app("ovtui sessions", api_key=api_key, health=health, lifespan=lifespan)
    answer_errors_in_the_envelope(app)
    app.include_router(sessions_router(parts))
    app.include_router(tasks_router(parts))
    app.include_router(search_router(parts))
    app.include_router(content_router(parts))
    app.include_router(fs_router(parts))
    app.include_router(session_context_router(parts))
    app.include_router(evolution_router(parts))
    app.include_router(content_write_router(parts))
    app.include_router(system_router(parts))
    app.include_router(resources_router())
    # Innermost (after the key and the body limit): an unauthenticated caller learns no user name.
    owner = parts.workspace.agent.visibility().user
    app.user_middleware.append(Middleware(UserSpaces, owner=owner, spaces=spaces))
    app.router.routes.append(Route(MCP_PATH, mcp, methods=["GET", "POST", "DELETE"]))
    app.state.parts = parts
    app.state.events = parts.events
    return app
