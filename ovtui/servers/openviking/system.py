"""``GET /api/v1/system/status`` as OpenViking 0.5.2 answers it (``initialized`` and the caller's
``user``, which clients read to build their URIs), and the ``auth_mode`` ``/health`` reports:
``api_key`` when the server is started with a key, else ``dev`` (no key: loopback only)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.routing import OpenVikingRoute, full


def auth_mode(api_key: str | None) -> str:
    return "api_key" if api_key else "dev"


def system_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1/system", tags=["system"], route_class=OpenVikingRoute)
    user = parts.workspace.agent.visibility().user

    @router.get("/status")
    async def status() -> JSONResponse:
        return full({"initialized": True, "user": user})

    return router
