"""The FastAPI app every ovtui server starts from: ``GET /health`` open, everything else behind a
bearer key when one is set (OpenAPI included: it describes the private routes)."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

HEALTH_PATH = "/health"


class BearerAuth:
    """Pure ASGI middleware (cheaper than BaseHTTPMiddleware): one constant-time compare per request."""

    def __init__(self, app: ASGIApp, api_key: str, open_paths: frozenset[str]) -> None:
        self.app = app
        self.expected = f"Bearer {api_key}".encode()
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.open_paths:
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        body = b'{"detail":"missing or wrong bearer token (Authorization: Bearer <key>)"}'
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
