"""OpenViking's envelope: ``{"status": "ok"|"error", "result": …, "error": null|{code, message}}``,
and the error handlers that answer every failure in it."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ovtui.core.errors import OvtuiError
from ovtui.servers.base.app import disk_error
from ovtui.sessions.store import SessionError

HTTP_STATUS = {"NOT_FOUND": 404, "FAILED_PRECONDITION": 409, "RESOURCE_EXHAUSTED": 429, "UNAVAILABLE": 503}


def ok(result: Any) -> JSONResponse:
    return JSONResponse({"status": "ok", "result": result, "error": None})


def fail(code: str, message: str, status: int) -> JSONResponse:
    return JSONResponse(
        {"status": "error", "result": None, "error": {"code": code, "message": message}}, status
    )


def field_error(exc: RequestValidationError, content_type: str) -> str:
    """The first validation error, as one line naming the field (or the body)."""
    first = exc.errors()[0]
    if first.get("type") == "json_invalid":  # its loc is the character offset, not a field
        where = first.get("loc", ("body", "?"))[-1]
        return f"body: not valid JSON at character {where} ({first.get('ctx', {}).get('error', 'invalid')})"
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path")]
    if not loc and "json" not in content_type:
        return f"body: expected a JSON object with Content-Type: application/json, got {content_type!r}"
    return f"{'.'.join(loc) or 'body'}: {first.get('msg', 'invalid')}"


def answer_errors_in_the_envelope(app: FastAPI) -> None:
    @app.exception_handler(SessionError)
    async def session_error(request: Request, exc: SessionError) -> JSONResponse:
        return fail(exc.code, str(exc), HTTP_STATUS.get(exc.code, 400))

    @app.exception_handler(OvtuiError)
    async def ovtui_error(request: Request, exc: OvtuiError) -> JSONResponse:
        return fail("INVALID_ARGUMENT", str(exc), 400)

    @app.exception_handler(OSError)
    async def disk(request: Request, exc: OSError) -> JSONResponse:
        parts = getattr(request.app.state, "parts", None)  # the path as the workspace knows it
        status, code, message = disk_error(exc, None if parts is None else parts.workspace.root)
        return fail(code, message, status)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        content_type = request.headers.get("content-type", "")
        return fail("INVALID_ARGUMENT", field_error(exc, content_type), 422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = "NOT_FOUND" if exc.status_code == 404 else "HTTP_ERROR"
        return fail(code, str(exc.detail), exc.status_code)
