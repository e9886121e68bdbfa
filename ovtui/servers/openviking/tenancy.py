"""Which user a request is for: OpenViking's trusted headers ``X-OpenViking-User`` (and
``X-OpenViking-Account``) name it; without them, the API key's user — the workspace's own.

A workspace holds one user's space (``[workspace] user``): a request that names another user is
refused (403 ``PERMISSION_DENIED``, one line naming both) before any route runs (``/health``
aside), so two users' facts can never be merged into one ``profile.md``. The account is not a
space of ovtui's: any account is accepted, and said back nowhere.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from ovtui.servers.base.app import error_body, send_error

USER_HEADER = b"x-openviking-user"


class OneUserOnly:
    """ASGI middleware: a request whose ``X-OpenViking-User`` is not the workspace's user is refused."""

    def __init__(self, app: ASGIApp, user: str) -> None:
        self.app, self.user = app, user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") != "/health":  # health says who: never refused
            named = dict(scope.get("headers") or ()).get(USER_HEADER)
            asked = named.decode("latin-1").strip() if named is not None else ""
            if asked and asked != self.user:
                message = (
                    f"X-OpenViking-User {asked!r}: this workspace holds the memories of user "
                    f"{self.user!r} only ([workspace] user); serve another workspace for {asked!r}"
                )
                await send_error(send, 403, error_body("PERMISSION_DENIED", message))
                return
        await self.app(scope, receive, send)
