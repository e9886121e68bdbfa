"""Session routes: create, list, read a session; add messages; commit (archive now, extract and
train in a background task).

Every route that reads or writes session files does it in a worker thread: the per-session lock
blocks while another process holds it, and the event loop must keep serving the others.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse

from ovtui.protocols.sessions import (
    AddMessageRequest,
    AddMessagesBatchRequest,
    CreateSessionRequest,
    MemoryPolicy,
    SessionMessage,
)
from ovtui.servers.base.pool import PoolFull
from ovtui.servers.openviking.envelope import fail, ok
from ovtui.servers.openviking.parts import ServerParts
from ovtui.sessions.store import Archive, SessionError

NO_BODY = Body(None)  # OpenViking clients may POST without a body

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


def sessions_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"])
    sessions, workspace = parts.sessions, parts.workspace

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

    @router.post("")
    async def create_session(request: CreateSessionRequest | None = NO_BODY) -> JSONResponse:
        request = request or CreateSessionRequest()
        check_memory_types(request.memory_policy, workspace.memory_types())
        meta = await asyncio.to_thread(sessions.create, request.session_id, request.memory_policy)
        return ok(
            {
                "session_id": meta.session_id,
                "uri": sessions.uri(meta.session_id),
                **meta.model_dump(mode="json"),
            }
        )

    @router.get("")
    async def list_sessions() -> JSONResponse:
        ids = await asyncio.to_thread(sessions.list_ids)
        return ok([{"session_id": s, "uri": sessions.uri(s)} for s in ids])

    def read_session(session_id: str, auto_create: bool) -> dict[str, Any]:
        if auto_create:
            sessions.ensure(session_id)
        return session_body(session_id)

    @router.get("/{session_id}")
    async def get_session(session_id: str, auto_create: bool = Query(False)) -> JSONResponse:
        return ok(await asyncio.to_thread(read_session, session_id, auto_create))

    async def add(session_id: str, requests: list[AddMessageRequest]) -> JSONResponse:
        stored = [r.to_stored(sessions.next_message_id()) for r in requests]
        count = await asyncio.to_thread(sessions.append, session_id, stored)
        return ok({"session_id": session_id, "message_count": count, "added": len(stored)})

    @router.post("/{session_id}/messages")
    async def add_message(session_id: str, request: AddMessageRequest) -> JSONResponse:
        return await add(session_id, [request])

    @router.post("/{session_id}/messages/batch")
    async def add_messages(session_id: str, request: AddMessagesBatchRequest) -> JSONResponse:
        return await add(session_id, request.messages)

    def take_archive(session_id: str) -> tuple[Archive, list[SessionMessage], MemoryPolicy]:
        policy = sessions.meta(session_id).policy()
        archive, messages = sessions.archive(session_id)
        return archive, messages, policy

    @router.post("/{session_id}/commit")
    async def commit(session_id: str) -> JSONResponse:
        archive, messages, policy = await asyncio.to_thread(take_archive, session_id)

        async def work() -> dict[str, Any]:
            outcome = await parts.committer.commit_archive(archive, messages, policy)
            return outcome.task_result()

        try:
            job = parts.pool.submit(f"{session_id}:{archive.name}", work)
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

    return router
