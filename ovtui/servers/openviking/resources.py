"""``POST /api/v1/resources`` and ``POST /api/v1/resources/temp_upload`` (what OpenViking clients call
to add a document, Hermes Agent's ``viking_add_resource`` first uploading a local file): ovtui holds
memories, not resources, so both are refused in one line a client can show (501
``NOT_IMPLEMENTED``, naming what to use instead) before the body is read, rather than a bare 404."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from ovtui.memory.retrieval.access import AccessError
from ovtui.servers.openviking.routing import OpenVikingRoute

NOT_SERVED = (
    "resources are not served by ovtui (it holds memories only): "
    "store the text as a memory with content/write (viking_remember) instead"
)


def resources_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1/resources", tags=["resources"], route_class=OpenVikingRoute)

    @router.post("")
    @router.post("/temp_upload")
    async def refused() -> JSONResponse:
        raise AccessError("NOT_IMPLEMENTED", NOT_SERVED, 501, {})

    return router
