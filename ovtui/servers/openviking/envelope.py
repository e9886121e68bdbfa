"""OpenViking's envelope: ``{"status": "ok"|"error", "result": …, "error": null|{code, message}}``,
the error handlers that answer every failure in it, and the route class every router of the API
uses, which refuses what a request may not carry before a route sees it.

Status codes: a request that does not validate is a 422 naming the field (OpenViking answers 400
``INVALID_ARGUMENT``; ovtui keeps FastAPI's 422 with the same code, and its message names the
field as one line); a URL whose percent-escapes are not UTF-8 is a 400 (decoded with replacement
characters, two different ids would name one session); a full disk is a 507
``INSUFFICIENT_STORAGE`` naming the file, any other OSError one line naming the file and cause.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import unquote_to_bytes

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from ovtui.core.errors import OvtuiError
from ovtui.protocols.wire_json import UncleanJson, parse_json_body
from ovtui.servers.base.app import disk_error
from ovtui.sessions.session_files import SessionError

HTTP_STATUS = {
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "FAILED_PRECONDITION": 409,
    "RESOURCE_EXHAUSTED": 429,
    "UNAVAILABLE": 503,
    "INSUFFICIENT_STORAGE": 507,
}
RETRY_AFTER = {"UNAVAILABLE": "1"}


def ok(result: Any) -> JSONResponse:
    return JSONResponse({"status": "ok", "result": result, "error": None})


def fail(code: str, message: str, status: int, details: dict[str, str] | None = None) -> JSONResponse:
    headers = {"Retry-After": RETRY_AFTER[code]} if code in RETRY_AFTER else None
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return JSONResponse({"status": "error", "result": None, "error": error}, status, headers)


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


def _path_problem(request: Request) -> str | None:
    raw = request.scope.get("raw_path")
    if not raw:
        return None
    try:
        unquote_to_bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"path: byte {exc.start} of the decoded URL path is not UTF-8; ids are UTF-8 text"
    return None


async def _body_problem(request: Request) -> UncleanJson | None:
    if "json" not in request.headers.get("content-type", "json"):
        return None  # FastAPI names a body of another type
    body = await request.body()  # kept: the route reads the same bytes
    if not body:
        return None
    try:
        parse_json_body(body)
    except UncleanJson as exc:
        return exc
    except (ValueError, RecursionError):
        return None  # not JSON at all: FastAPI names where
    return None


class CheckedRoute(APIRoute):
    """A route that refuses a URL that is not UTF-8 and a JSON body holding text or numbers no
    file can keep (lone surrogates; NaN, Infinity, 1e400) before its handler runs."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            problem = _path_problem(request)
            if problem:
                return fail("INVALID_ARGUMENT", problem, 400)
            unclean = await _body_problem(request)
            if unclean is not None:
                raise RequestValidationError(
                    [{"loc": ("body", *unclean.where), "msg": unclean.problem, "type": "value_error"}]
                )
            return await handler(request)

        return checked


def answer_errors_in_the_envelope(app: FastAPI) -> None:
    @app.exception_handler(SessionError)
    async def session_error(request: Request, exc: SessionError) -> JSONResponse:
        return fail(exc.code, str(exc), HTTP_STATUS.get(exc.code, 400), exc.details)

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
