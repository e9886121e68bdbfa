"""A session read back and deleted, as OpenViking answers: ``GET /api/v1/sessions/{id}/context``
(the live messages ``token_budget`` keeps, by OpenViking's turn-aware rule, and the newest
commit's overview), ``GET
/api/v1/sessions/{id}/archives/{archive_id}`` (one completed commit) and ``DELETE
/api/v1/sessions/{id}`` (the session's folder; its memories stay)."""

from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from ovtui.memory.retrieval.access import invalid_argument
from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.routing import OpenVikingRoute, full
from ovtui.sessions.session_files import check_session_id

DEFAULT_TOKEN_BUDGET = 128_000


def session_context_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"], route_class=OpenVikingRoute)
    workspace = parts.workspace

    @router.get("/{session_id}/context")
    async def context(session_id: str, token_budget: int = Query(DEFAULT_TOKEN_BUDGET)) -> JSONResponse:
        if token_budget < 0:
            raise invalid_argument(
                "token_budget must be greater than or equal to 0",
                {"field": "token_budget", "value": token_budget},
            )
        return full(await workspace.agent.session_context(check_session_id(session_id), token_budget))

    @router.get("/{session_id}/archives/{archive_id}")
    async def archive(session_id: str, archive_id: str) -> JSONResponse:
        return full(await workspace.agent.session_archive(check_session_id(session_id), archive_id))

    @router.delete("/{session_id}")
    async def delete(session_id: str) -> JSONResponse:
        await workspace.agent.delete_session(check_session_id(session_id))
        return full({"session_id": session_id})

    return router
