"""``POST /api/v1/content/write`` and ``DELETE /api/v1/fs?uri=``: an agent's write and delete of one
memory file, in OpenViking 0.5.2's shapes (its body fields: ``uri``, ``content``, ``mode``, ``wait``,
``timeout``, ``telemetry``; nothing else), through the one write rule (``wiring.services.agent_writes``):
refused for what is not a declared memory type's file or not the caller's, journaled, in History.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Header, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.routing import ACTOR_PEER_HEADER, OpenVikingRoute, compact, full

WRITE_BODY = Body(...)


class WriteContentRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    uri: str
    content: str
    mode: str = "replace"
    wait: bool = False  # accepted: a write is done when it answers
    timeout: float | None = None
    telemetry: Any = False


def content_write_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1", tags=["content"], route_class=OpenVikingRoute)
    agent = parts.workspace.agent

    @router.post("/content/write")
    async def write(
        request: WriteContentRequest = WRITE_BODY,
        actor_peer: str | None = Header(None, alias=ACTOR_PEER_HEADER),
    ) -> JSONResponse:
        visibility = agent.visibility(None, actor_peer)
        return compact(await agent.write(request.uri, request.content, request.mode, visibility))

    @router.delete("/fs")
    async def forget(
        uri: str = Query(...),
        recursive: bool = Query(False),
        actor_peer: str | None = Header(None, alias=ACTOR_PEER_HEADER),
    ) -> JSONResponse:
        del recursive  # one memory file at a time: a folder is refused as not a memory file
        return full(await agent.forget(uri, agent.visibility(None, actor_peer)))

    return router
