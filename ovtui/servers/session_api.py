"""The session API (``ovtui serve``): the subset of OpenViking's HTTP API agents use, on the one
server base (``ovtui.servers``), with OpenViking's envelope
``{"status": "ok"|"error", "result": …, "error": null|{"code", "message"}}``.

A commit archives at once (phase 1, before the answer) and runs phase 2 as a background task of
the server's file-backed job store: ``GET /api/v1/tasks/{id}`` says pending → running →
completed | failed; a task a crash interrupted reads failed after a restart, its archive kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import Body, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ovtui.core.context import RunContext
from ovtui.core.errors import OvtuiError
from ovtui.core.events import EventBus
from ovtui.protocols.sessions import (
    AddMessageRequest,
    AddMessagesBatchRequest,
    CreateSessionRequest,
    MemoryPolicy,
    SessionMessage,
)
from ovtui.servers.base.app import create_app
from ovtui.servers.base.pool import PoolFull, WorkerPool
from ovtui.servers.session_inbox import SessionInbox
from ovtui.sessions.overview import TASK_STATUS, TASKS_DIR
from ovtui.sessions.store import Archive, SessionError, SessionStore
from ovtui.storage.event_log import EventLog
from ovtui.storage.jobs import Job, JobStore
from ovtui.wiring.workspace import Workspace, run_stamp

NO_BODY = Body(None)  # OpenViking clients may POST without a body
TASK_TYPE = "session_commit"
TASK_PREFIX = "task_"
TaskStatus = Literal["pending", "running", "completed", "failed"]  # TASK_STATUS's values
HTTP_STATUS = {"NOT_FOUND": 404, "FAILED_PRECONDITION": 409, "RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503}


def ok(result: Any) -> JSONResponse:
    return JSONResponse({"status": "ok", "result": result, "error": None})


def fail(code: str, message: str, status: int) -> JSONResponse:
    return JSONResponse(
        {"status": "error", "result": None, "error": {"code": code, "message": message}}, status
    )


def task_body(job: Job) -> dict[str, Any]:
    session_id, _, archive = job.label.partition(":")
    return {
        "task_id": job.id,
        "task_type": TASK_TYPE,
        "status": TASK_STATUS[job.status],
        "resource_id": session_id,
        "archive": archive,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "result": job.result,
        "error": job.error,
    }


# OpenViking's memory types that ovtui never extracts: a policy naming them is accepted (they are
# simply never written); any other name not declared in the workspace is a mistake, named.
OPENVIKING_ONLY_TYPES = frozenset({"patterns", "tools", "skills"})


def check_memory_types(policy: MemoryPolicy | None, declared: list[str]) -> None:
    known = {*declared, *OPENVIKING_ONLY_TYPES}
    unknown = [t for t in (policy.memory_types if policy else None) or [] if t not in known]
    if unknown:
        raise SessionError(
            f"memory_policy.memory_types: unknown type(s) {', '.join(map(repr, unknown))} "
            f"(declared: {', '.join(sorted(declared))})"
        )


def _field_error(exc: RequestValidationError, content_type: str) -> str:
    first = exc.errors()[0]
    if first.get("type") == "json_invalid":  # its loc is the character offset, not a field
        where = first.get("loc", ("body", "?"))[-1]
        return f"body: not valid JSON at character {where} ({first.get('ctx', {}).get('error', 'invalid')})"
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
    if not loc and "json" not in content_type:
        return f"body: expected a JSON object with Content-Type: application/json, got {content_type!r}"
    return f"{'.'.join(loc) or 'body'}: {first.get('msg', 'invalid')}"


def create_session_app(
    workspace: Workspace,
    *,
    api_key: str | None = None,
    workers: int = 4,
    state: Any = None,
    watch_inbox: bool = True,
) -> FastAPI:
    store = JobStore(state or workspace.paths.state / TASKS_DIR, prefix=TASK_PREFIX)
    run_id = run_stamp()
    log = EventLog(workspace.paths, run_id)
    events = EventBus([log])

    def waiting(session_id: str) -> None:
        events.log(f"session {session_id!r} is locked by another process: waiting for it", level="warning")

    sessions = SessionStore(workspace.paths, on_wait=waiting)
    committer = workspace.session_committer(sessions, RunContext(run_id, events, asyncio.Event()))
    pool: WorkerPool | None = None

    def the_pool() -> WorkerPool:
        nonlocal pool
        if pool is None:  # made inside the running loop (its semaphore belongs to that loop)
            pool = WorkerPool(store, workers)
        return pool

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        inbox = SessionInbox(committer, events)
        watcher = asyncio.create_task(inbox.watch(stop)) if watch_inbox else None
        try:
            yield
        finally:
            stop.set()
            if watcher is not None:
                await asyncio.gather(watcher, return_exceptions=True)
                await inbox.drain()
            if pool is not None:
                await pool.close()
            await committer.close()
            store.close()
            log.close()

    def health() -> dict[str, Any]:
        return {"workspace": workspace.paths.root.name, "pending_tasks": pool.pending if pool else 0}

    app = create_app("ovtui sessions", api_key=api_key, health=health, lifespan=lifespan)

    @app.exception_handler(SessionError)
    async def session_error(request: Request, exc: SessionError) -> JSONResponse:
        return fail(exc.code, str(exc), HTTP_STATUS.get(exc.code, 400))

    @app.exception_handler(OvtuiError)
    async def ovtui_error(request: Request, exc: OvtuiError) -> JSONResponse:
        return fail("INVALID_ARGUMENT", str(exc), 400)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        content_type = request.headers.get("content-type", "")
        return fail("INVALID_ARGUMENT", _field_error(exc, content_type), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = "NOT_FOUND" if exc.status_code == 404 else "HTTP_ERROR"
        return fail(code, str(exc.detail), exc.status_code)

    def session_body(session_id: str) -> dict[str, Any]:
        meta = sessions.meta(session_id)
        messages = sessions.messages(session_id)
        return {
            **meta.model_dump(mode="json"),
            "uri": sessions.uri(session_id),
            "message_count": len(messages),
            "pending_tokens": sum(len(m.text) // 4 for m in messages),
            "archives": [a.name for a in sessions.archives(session_id)],
        }

    # Every route that reads or writes session files does it in a worker thread: the per-session
    # lock blocks while another process holds it, and the event loop must keep serving the others.
    @app.post("/api/v1/sessions", tags=["sessions"])
    async def create_session(request: CreateSessionRequest | None = NO_BODY) -> JSONResponse:
        request = request or CreateSessionRequest()
        check_memory_types(request.memory_policy, workspace.store.registry.names())
        meta = await asyncio.to_thread(sessions.create, request.session_id, request.memory_policy)
        return ok(
            {
                "session_id": meta.session_id,
                "uri": sessions.uri(meta.session_id),
                **meta.model_dump(mode="json"),
            }
        )

    @app.get("/api/v1/sessions", tags=["sessions"])
    async def list_sessions() -> JSONResponse:
        ids = await asyncio.to_thread(sessions.list_ids)
        return ok([{"session_id": s, "uri": sessions.uri(s)} for s in ids])

    def read_session(session_id: str, auto_create: bool) -> dict[str, Any]:
        if auto_create:
            sessions.ensure(session_id)
        return session_body(session_id)

    @app.get("/api/v1/sessions/{session_id}", tags=["sessions"])
    async def get_session(session_id: str, auto_create: bool = Query(False)) -> JSONResponse:
        return ok(await asyncio.to_thread(read_session, session_id, auto_create))

    async def add(session_id: str, requests: list[AddMessageRequest]) -> JSONResponse:
        stored = [r.to_stored(sessions.next_message_id()) for r in requests]
        count = await asyncio.to_thread(sessions.append, session_id, stored)
        return ok({"session_id": session_id, "message_count": count, "added": len(stored)})

    @app.post("/api/v1/sessions/{session_id}/messages", tags=["sessions"])
    async def add_message(session_id: str, request: AddMessageRequest) -> JSONResponse:
        return await add(session_id, [request])

    @app.post("/api/v1/sessions/{session_id}/messages/batch", tags=["sessions"])
    async def add_messages(session_id: str, request: AddMessagesBatchRequest) -> JSONResponse:
        return await add(session_id, request.messages)

    def take_archive(session_id: str) -> tuple[Archive, list[SessionMessage], MemoryPolicy]:
        policy = sessions.meta(session_id).policy()
        archive, messages = sessions.archive(session_id)
        return archive, messages, policy

    @app.post("/api/v1/sessions/{session_id}/commit", tags=["sessions"])
    async def commit(session_id: str) -> JSONResponse:
        archive, messages, policy = await asyncio.to_thread(take_archive, session_id)

        async def work() -> dict[str, Any]:
            outcome = await committer.commit_archive(archive, messages, policy)
            return outcome.task_result()

        try:
            job = the_pool().submit(f"{session_id}:{archive.name}", work)
        except PoolFull as exc:
            return fail("RESOURCE_EXHAUSTED", str(exc), 429)
        return ok(
            {
                "session_id": session_id,
                "status": "accepted",
                "task_id": job.id,
                "archive_uri": archive.uri,
                "archived": True,
            }
        )

    @app.get("/api/v1/tasks/{task_id}", tags=["tasks"])
    async def get_task(task_id: str, wait: float = Query(0.0, ge=0.0, le=30.0)) -> JSONResponse:
        job = store.get(task_id)
        if job is None:
            return fail("NOT_FOUND", f"task {task_id!r} not found", 404)
        if not job.finished and wait > 0:
            await the_pool().wait(task_id, wait)
        return ok(task_body(job))

    @app.get("/api/v1/tasks", tags=["tasks"])
    async def list_tasks(
        task_type: str | None = Query(None),
        status: TaskStatus | None = None,
        resource_id: str | None = Query(None),
        limit: int = Query(50, ge=1, le=1000),
    ) -> JSONResponse:
        bodies = [task_body(j) for j in store.jobs.values()]
        if task_type is not None:
            bodies = [b for b in bodies if b["task_type"] == task_type]
        if status is not None:
            bodies = [b for b in bodies if b["status"] == status]
        if resource_id is not None:
            bodies = [b for b in bodies if b["resource_id"] == resource_id]
        bodies.sort(key=lambda b: b["created_at"], reverse=True)
        return ok(bodies[:limit])

    app.state.sessions = sessions
    app.state.committer = committer
    app.state.events = events
    return app
