"""The FastAPI app every ovtui server starts from: ``GET /health`` open, everything else behind a
key when one is set (OpenAPI included: it describes the private routes)."""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

HEALTH_PATH = "/health"


UNAUTHORIZED = "missing or wrong key (Authorization: Bearer <key>, or X-API-Key: <key>)"
# OpenViking's envelope (what its clients read) and FastAPI's ``detail`` (what ours read).
UNAUTHORIZED_BODY = json.dumps(
    {
        "status": "error",
        "result": None,
        "error": {"code": "UNAUTHENTICATED", "message": UNAUTHORIZED},
        "detail": UNAUTHORIZED,
    }
).encode()


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
        body = UNAUTHORIZED_BODY
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", b"Bearer"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def create_app(
    title: str,
    *,
    api_key: str | None = None,
    health: Callable[[], dict[str, Any]] | None = None,
    lifespan: Any = None,
    version: str = "1",
) -> FastAPI:
    """A FastAPI app with ``GET /health`` (``{"status": "ok", "service": title, **health()}``)."""
    app = FastAPI(title=title, version=version, lifespan=lifespan)

    @app.get(HEALTH_PATH, tags=["health"])
    async def health_route() -> dict[str, Any]:
        return {"status": "ok", "service": title, **(health() if health else {})}

    if api_key:
        app.add_middleware(BearerAuth, api_key=api_key, open_paths=frozenset({HEALTH_PATH}))
    return app
