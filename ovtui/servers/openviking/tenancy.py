"""Which user's space a request is for: OpenViking's trusted headers ``X-OpenViking-User`` (and
``X-OpenViking-Account``) name it; without them, the workspace's own user (``[workspace] user``,
the API key's user: ovtui has one key, no per-user keys).

The owner's requests go to the owner's routes; a user of ``[workspace] users`` gets the routes of
its own space (``users/<user>/``: its own session store, memories and history), so two users'
facts never meet in one ``profile.md`` and neither can find or read the other's (a URI of another
space is 403, as OpenViking answers it). A name that is not a valid user name is 400
``INVALID_ARGUMENT``; a user not declared is 403 ``PERMISSION_DENIED`` naming it and the setting
— users are declared, never created by a request. The account is not a space of ovtui's: any
account is accepted. ``/health`` is never refused.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.types import ASGIApp, Receive, Scope, Send

from ovtui.core.errors import UnsafePathError
from ovtui.core.names import validate_user
from ovtui.servers.base.app import error_body, send_error

USER_HEADER = b"x-openviking-user"


def named_user(scope: Scope) -> str:
    """The user a request's ``X-OpenViking-User`` names ("" when it names none)."""
    named = dict(scope.get("headers") or ()).get(USER_HEADER)
    return named.decode("latin-1").strip() if named is not None else ""


class UserSpaces:
    """ASGI middleware: a request goes to the routes of the space of the user it names."""

    def __init__(self, app: ASGIApp, owner: str, spaces: Mapping[str, ASGIApp]) -> None:
        self.app, self.owner, self.spaces = app, owner, spaces

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        asked = named_user(scope) if scope["type"] == "http" and scope.get("path") != "/health" else ""
        if not asked or asked == self.owner:
            await self.app(scope, receive, send)
            return
        try:
            validate_user(asked, what="X-OpenViking-User")
        except UnsafePathError as exc:
            await send_error(send, 400, error_body("INVALID_ARGUMENT", str(exc)))
            return
        space = self.spaces.get(asked)
        if space is None:
            declared = ", ".join(repr(u) for u in (self.owner, *self.spaces))
            message = (
                f"X-OpenViking-User {asked!r} is not a user of this workspace (its users: {declared}); "
                "add it to [workspace] users in ovtui.toml to give it a space"
            )
            await send_error(send, 403, error_body("PERMISSION_DENIED", message))
            return
        await space(scope, receive, send)
