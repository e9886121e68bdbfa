"""``GET /api/v1/content/read|abstract|overview?uri=``: a file's text, and a file's or a folder's
abstract and overview, as OpenViking answers them (``result`` a plain string).

``read`` takes OpenViking's ``offset`` (first line, 0-based), ``limit`` (lines, -1: all) and ``raw``
(keep a memory file's MEMORY_FIELDS trailer); it reads memories, sessions' messages and archives,
and a commit's ``memory_diff.json`` (the ``memory_diff_uri`` of a task's result). ovtui also takes
``session_id``: a memory read for a session is recorded as served to it. ``abstract`` of a file is
the file's own (OpenViking answers its folder's).
"""

from __future__ import annotations

from fastapi import APIRouter, Header, Query
from fastapi.responses import JSONResponse

from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.routing import ACTOR_PEER_HEADER, OpenVikingRoute, full
from ovtui.sessions.session_files import check_session_id


def content_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1/content", tags=["content"], route_class=OpenVikingRoute)
    workspace = parts.workspace

    @router.get("/read")
    async def read(
        uri: str = Query(...),
        offset: int = Query(0),
        limit: int = Query(-1),
        raw: bool = Query(False),
        session_id: str | None = Query(None),
        actor_peer: str | None = Header(None, alias=ACTOR_PEER_HEADER),
    ) -> JSONResponse:
        consumer = check_session_id(session_id) if session_id else None
        visibility = workspace.agent.visibility(consumer, actor_peer)
        text = await workspace.agent.read(
            uri, visibility, offset=offset, limit=limit, raw=raw, consumer=consumer
        )
        return full(text)

    @router.get("/abstract")
    async def abstract(
        uri: str = Query(...), actor_peer: str | None = Header(None, alias=ACTOR_PEER_HEADER)
    ) -> JSONResponse:
        return full(await workspace.agent.abstract(uri, workspace.agent.visibility(None, actor_peer)))

    @router.get("/overview")
    async def overview(
        uri: str = Query(...), actor_peer: str | None = Header(None, alias=ACTOR_PEER_HEADER)
    ) -> JSONResponse:
        return full(await workspace.agent.overview(uri, workspace.agent.visibility(None, actor_peer)))

    return router
