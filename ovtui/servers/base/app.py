"""The FastAPI app every ovtui server starts from: ``GET /health`` open, everything else behind a
key when one is set (OpenAPI included: it describes the private routes)."""

from __future__ import annotations

import errno
import hmac
import json
import os
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ovtui.core.bounds import MAX_REQUEST_BODY_BYTES, MIB
from ovtui.storage.faults import os_error_line

HEALTH_PATH = "/health"
CLOSE = (b"connection", b"close")


UNAUTHORIZED = "missing or wrong key (Authorization: Bearer <key>, or X-API-Key: <key>)"


def error_body(code: str, message: str) -> bytes:
    """An error both kinds of client read: OpenViking's envelope (the session API's clients) and
    FastAPI's ``detail`` (the benchmark service's)."""
    envelope = {"status": "error", "result": None, "error": {"code": code, "message": message}}
    return json.dumps({**envelope, "detail": message}).encode()


async def send_error(send: Send, status: int, body: bytes, *headers: tuple[bytes, bytes]) -> None:
    start: list[tuple[bytes, bytes]] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": [*start, *headers]})
    await send({"type": "http.response.body", "body": body})


UNAUTHORIZED_BODY = error_body("UNAUTHENTICATED", UNAUTHORIZED)

# A disk that refuses a write: full is 507 (retry once there is room), read-only or not permitted
# 503 (the service cannot write now); anything else the disk says is 500. Each in one line.
_DISK_ANSWERS = {
    errno.ENOSPC: (507, "INSUFFICIENT_STORAGE"),
    errno.EDQUOT: (507, "INSUFFICIENT_STORAGE"),
    errno.EROFS: (503, "UNAVAILABLE"),
    errno.EACCES: (503, "UNAVAILABLE"),
    errno.EPERM: (503, "UNAVAILABLE"),
}


def disk_error(exc: OSError, root: str | os.PathLike[str] | None = None) -> tuple[int, str, str]:
    """(status, code, one line) answering an ``OSError``; its path relative to the workspace
    ``root``, or only its last part: a server never reveals where its files are."""
    status, code = _DISK_ANSWERS.get(exc.errno or 0, (500, "INTERNAL"))

    def show(path: str) -> str:
        rel = os.path.relpath(path, root) if root is not None and os.path.isabs(path) else ".."
        return os.path.basename(path) if rel.startswith("..") else rel

    return status, code, os_error_line(exc, show)


class BearerAuth:
    """Pure ASGI middleware (cheaper than BaseHTTPMiddleware): constant-time compares per request.
    The key comes as a bearer token or, as OpenViking's clients also send it, in ``X-API-Key``."""

    def __init__(self, app: ASGIApp, api_key: str, open_paths: frozenset[str]) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode()
        self.expected_header = api_key.encode()
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        bearer = hmac.compare_digest(headers.get(b"authorization", b""), self.expected)
        header = hmac.compare_digest(headers.get(b"x-api-key", b""), self.expected_header)
        if bearer or header:
            await self.app(scope, receive, send)
            return
        await send_error(send, 401, UNAUTHORIZED_BODY, (b"www-authenticate", b"Bearer"))


class BodyLimit:
    """Pure ASGI middleware bounding a request body (the routes read theirs whole, to parse it):
    a declared ``Content-Length`` over the limit is answered 413 before a byte of the body is read;
    a body without one (chunked) is counted as it streams, and answered 413 as soon as it passes
    the limit, nothing more read. The connection closes after the answer (the unread rest of the
    body cannot be skipped), and the route, which sees the client gone, writes nothing."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _refusal(self, how: str) -> bytes:
        return error_body(
            "RESOURCE_EXHAUSTED",
            f"the request body {how}, over the {self.limit} byte limit ({self.limit / MIB:g} MiB) of "
            "this server: send it in smaller requests",
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > self.limit:
            await send_error(send, 413, self._refusal(f"is {int(declared)} bytes"), CLOSE)
            return
        received = 0
        started = refused = False

        async def counted_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    refused = True
                    if not started:
                        await send_error(send, 413, self._refusal(f"passed {self.limit} bytes"), CLOSE)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return  # the 413 went out: what the route answers to the disconnect is dropped
            started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not refused:
                raise  # a route's own failure; one that reads a refused body as a disconnect is not


def create_app(
    title: str,
    *,
    api_key: str | None = None,
    health: Callable[[], dict[str, Any]] | None = None,
    lifespan: Any = None,
    version: str = "1",
    max_body_bytes: int = MAX_REQUEST_BODY_BYTES,
) -> FastAPI:
    """A FastAPI app with ``GET /health`` (``{"status": "ok", "service": title, **health()}``) and
    request bodies bounded to ``max_body_bytes``."""
    app = FastAPI(title=title, version=version, lifespan=lifespan)

    @app.get(HEALTH_PATH, tags=["health"])
    async def health_route() -> dict[str, Any]:
        return {"status": "ok", "service": title, **(health() if health else {})}

    @app.exception_handler(OSError)
    async def disk_error_route(request: Request, exc: OSError) -> Response:
        status, code, message = disk_error(exc)
        return Response(error_body(code, message), status, media_type="application/json")

    if api_key:
        app.add_middleware(BearerAuth, api_key=api_key, open_paths=frozenset({HEALTH_PATH}))
    # Added last, so outermost: a body is bounded before anything else looks at the request.
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    return app
