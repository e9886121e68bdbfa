"""How the retrieval, content, filesystem and session-reading routes answer, as OpenViking 0.5.2
answers them: the envelope forms (``compact``: only what is set; ``full``: with the null
``error``, ``telemetry`` and ``profile``; ``listing``: full plus a top-level ``has_more``), errors
with ``details`` (``error.details`` as OpenViking's SDK rebuilds its exceptions from them), and
request validation answered 400 ``INVALID_ARGUMENT`` with ``details.validation_errors``.

The routes of these modules use ``OpenVikingRoute``, which catches their errors itself, so the
app's own handlers (and the older routes' 422) stay as they are, and says in a ``Server-Timing``
header (W3C; milliseconds) how long the route took (``route``: reading and validating the body, the
handler, its answer encoded) and the stages its handler timed with ``stage`` (a find's ``find``:
the facade's search) — what a served request spent inside the server, for a client to tell from
what the network and its own side cost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from ovtui.core.errors import OvtuiError
from ovtui.memory.retrieval.access import AccessError
from ovtui.servers.openviking.envelope import HTTP_STATUS
from ovtui.sessions.session_files import SessionError

ACTOR_PEER_HEADER = "X-OpenViking-Actor-Peer"
SERVER_TIMING_HEADER = "Server-Timing"

# The stages the running request's handler timed (set by OpenVikingRoute for each request).
_stages: ContextVar[list[tuple[str, float]] | None] = ContextVar("ovtui_server_timing", default=None)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time a stage of the request for its ``Server-Timing`` header (nothing outside a route)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        stages = _stages.get()
        if stages is not None:
            stages.append((name, time.perf_counter() - started))


def server_timing(stages: list[tuple[str, float]]) -> str:
    return ", ".join(f"{name};dur={seconds * 1000:.3f}" for name, seconds in stages)


def compact(result: Any, status: int = 200) -> JSONResponse:
    return JSONResponse({"status": "ok", "result": result}, status)


def full(result: Any) -> JSONResponse:
    return JSONResponse({"status": "ok", "result": result, "error": None, "telemetry": None, "profile": None})


def listing(result: list[Any], has_more: bool) -> JSONResponse:
    body = {"status": "ok", "result": result, "error": None, "telemetry": None, "profile": None}
    return JSONResponse({**body, "has_more": has_more})


def failure(code: str, message: str, status: int, details: dict[str, Any] | None) -> JSONResponse:
    """An error: with ``details``, OpenViking's full form; without, its compact one."""
    if details is None:
        return JSONResponse({"status": "error", "error": {"code": code, "message": message}}, status)
    error = {"code": code, "message": message, "details": details}
    return JSONResponse(
        {"status": "error", "result": None, "error": error, "telemetry": None, "profile": None}, status
    )


def validation_failure(exc: RequestValidationError) -> JSONResponse:
    problems = [
        {
            "loc": [str(p) for p in e.get("loc", ())],
            "message": str(e.get("msg", "invalid")),
            "type": str(e.get("type", "")),
        }
        for e in exc.errors()
    ]
    first = problems[0] if problems else {"loc": ["body"], "message": "invalid"}
    message = f"Invalid request parameters: {'.'.join(first['loc'])}: {first['message']}"
    body = {"code": "INVALID_ARGUMENT", "message": message, "details": {"validation_errors": problems}}
    return JSONResponse({"status": "error", "error": body}, 400)


def answer_error(exc: Exception) -> JSONResponse:
    if isinstance(exc, RequestValidationError):
        return validation_failure(exc)
    if isinstance(exc, AccessError):
        return failure(exc.code, str(exc), exc.status, exc.details)
    if isinstance(exc, SessionError):
        return failure(exc.code, str(exc), HTTP_STATUS.get(exc.code, 400), {})
    assert isinstance(exc, OvtuiError)
    return failure("INVALID_ARGUMENT", str(exc), 400, {})


class OpenVikingRoute(APIRoute):
    """A route answering its validation and ovtui errors in OpenViking's shapes (see above)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            started = time.perf_counter()
            stages: list[tuple[str, float]] = []
            token = _stages.set(stages)
            try:
                response = await handler(request)
            except (RequestValidationError, OvtuiError) as exc:
                response = answer_error(exc)
            finally:
                _stages.reset(token)
            stages.append(("route", time.perf_counter() - started))
            response.headers[SERVER_TIMING_HEADER] = server_timing(stages)
            return response

        return route
