"""Who may see what, and the one way a ``viking://`` URI of a request becomes a path.

A caller sees its user's space (``viking://user/<user>/``) and the peers its ``Visibility`` names;
inside that space only what an agent may read: the memories (``memories/…``, ``peers/<peer>/…``),
the sessions (messages, archives and their ``memory_diff.json``; not their lock files) and the
history records' ``memory_diff.json``. ovtui's bookkeeping (``.ovtui/``, ``ovtui.toml``, runs, the
inbox, datasets, the history index) is refused, and so is a path whose link leads elsewhere: the
rules are checked on the path as written and on the path its links resolve to, which must stay
inside the workspace. Nothing is opened before the URI passes.

Errors carry OpenViking's codes and ``details``: a URI that is not one (no ``viking://``, an
unknown scope, ``..`` segments) is ``INVALID_URI`` (400); another user's space, a peer the caller
may not see and the bookkeeping are ``PERMISSION_DENIED`` (403); what does not exist is
``NOT_FOUND`` (404).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ovtui.core.errors import OvtuiError, UnsafePathError
from ovtui.core.names import validate_name
from ovtui.storage.paths import PEERS_DIR, RECORD_FILE, URI_SCHEME, WorkspacePaths

SESSIONS = "sessions"  # the sessions' folder (sessions/store.py names it too)
HISTORY = "history"
SESSION_BOOKKEEPING = frozenset({"lock"})  # files of a session folder that are ovtui's own
OTHER_SCOPES = frozenset({"resources", "agent", "system"})  # OpenViking's: ovtui holds none of them
SHORT_FORM_SPACES = frozenset({"memories", PEERS_DIR})  # viking://user/<these>/…: the caller's
_ARCHIVE = re.compile(r"^archive_\d{3,}$")

Kind = Literal["file", "directory", "resource", "session"]


class AccessError(OvtuiError):
    """A request that cannot be answered, with OpenViking's code, HTTP status and ``details``
    (None: an answer without them, as OpenViking gives for a missing archive)."""

    def __init__(self, code: str, message: str, status: int, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code, self.status, self.details = code, status, details


def invalid_uri(uri: str, reason: str) -> AccessError:
    return AccessError("INVALID_URI", f"Invalid URI: {uri} ({reason})", 400, {"uri": uri, "reason": reason})


def denied(uri: str, why: str = "read permission required") -> AccessError:
    return AccessError("PERMISSION_DENIED", f"Access denied for {uri}: {why}", 403, {"resource": uri})


def not_found(resource: str, kind: Kind = "file") -> AccessError:
    return AccessError(
        "NOT_FOUND", f"{kind.capitalize()} not found: {resource}", 404, {"type": kind, "resource": resource}
    )


def invalid_argument(message: str, details: dict[str, Any] | None = None) -> AccessError:
    return AccessError("INVALID_ARGUMENT", message, 400, details if details is not None else {})


@dataclass(frozen=True)
class Visibility:
    """The user whose space a caller sees, and which of the user's peers (``every_peer``: all)."""

    user: str
    peers: frozenset[str] = frozenset()
    every_peer: bool = False

    @classmethod
    def owner(cls, user: str) -> Visibility:
        """The person at the workspace (the CLI, the app): everything."""
        return cls(user, every_peer=True)

    def sees(self, peer: str | None) -> bool:
        return peer is None or self.every_peer or peer in self.peers


@dataclass(frozen=True)
class Located:
    """A URI that passed: its canonical form, its workspace-relative path ("" for the user's root)
    and its path on disk (links resolved, inside the workspace)."""

    uri: str
    rel: str
    path: Path

    @property
    def peer(self) -> str | None:
        parts = self.rel.split("/")
        return parts[1] if parts[0] == PEERS_DIR and len(parts) > 1 else None

    @property
    def is_memory(self) -> bool:
        parts = self.rel.split("/")
        return parts[0] == "memories" or (parts[0] == PEERS_DIR and len(parts) > 2)


def expand(uri: str, user: str) -> str:
    """A request's URI with OpenViking's aliases expanded (``viking://~/x``, ``viking://session/<id>/x``)
    and no trailing slash; refuses what is not a ``viking://`` URI. The short forms OpenViking's
    clients write, ``viking://user/memories/…`` and ``viking://user/peers/<peer>/…``, are the
    caller's space too (OpenViking 0.5.2 itself answers them 400; a user called ``memories`` or
    ``peers`` keeps the long form)."""
    if not isinstance(uri, str) or not uri.startswith(URI_SCHEME):
        raise invalid_uri(str(uri), "a viking:// URI is required")
    rest = uri[len(URI_SCHEME) :].rstrip("/")
    home = f"user/{user}"
    if rest == "~" or rest.startswith("~/"):
        rest = home + rest[1:]
    elif rest == "session" or rest.startswith("session/"):
        rest = f"{home}/{SESSIONS}{rest[len('session') :]}"
    else:
        scope, _, below = rest.partition("/")
        space = below.partition("/")[0]
        if scope == "user" and space in SHORT_FORM_SPACES and space != user:
            rest = f"{home}/{below}"  # viking://user/memories/… : the caller's own (ovtui's leniency)
    return URI_SCHEME + rest


def check_allowed(rel: str, uri: str, visibility: Visibility) -> None:
    """The rules on a workspace-relative path (the lexical one, then the resolved one)."""
    if not rel:
        return
    parts = rel.split("/")
    top = parts[0]
    if top == "memories":
        return
    if top == PEERS_DIR:
        if len(parts) > 1:
            try:
                peer = validate_name(parts[1], what="peer_id")
            except UnsafePathError as exc:
                raise invalid_uri(uri, str(exc)) from None
            if not visibility.sees(peer):
                raise denied(uri, f"peer {peer!r} is not visible to this caller")
        return
    if top == SESSIONS:
        if len(parts) > 2 and parts[2] in SESSION_BOOKKEEPING:
            raise denied(uri, "a session's lock is ovtui's bookkeeping")
        return
    if top == HISTORY and (len(parts) == 1 or (len(parts) == 2 and parts[1] != "index.jsonl")):
        return
    if top == HISTORY and len(parts) == 3 and parts[2] == RECORD_FILE:
        return
    raise denied(uri, "ovtui's bookkeeping is not served")


def _tree(rel: str) -> tuple[str, ...]:
    """The tree a workspace-relative path lies in: its top folder, or a peer's space."""
    parts = rel.split("/")
    return tuple(parts[:2]) if parts[0] == PEERS_DIR else (parts[0],)


def _no_link_out_of_tree(root: Path, inner: list[str], uri: str) -> None:
    """Refuse a path through a link that leads out of the tree it sits in: a link to the root (or
    from the memories into the history, a peer's space…) would show names that tree does not hold,
    even when the path comes back into it (``memories/root_link/memories``)."""
    tree = _tree("/".join(inner))
    for end in range(1, len(inner) + 1):
        step = root.joinpath(*inner[:end])
        if not os.path.islink(step):
            continue
        real = Path(os.path.realpath(step))
        if real == root or root not in real.parents or _tree(real.relative_to(root).as_posix()) != tree:
            raise denied(uri, "it is a symbolic link that leaves its tree")


def locate(paths: WorkspacePaths, uri: str, visibility: Visibility) -> Located:
    """The checked location of a request's URI (see the module's docstring); nothing is read."""
    full = expand(uri, visibility.user)
    parts = full[len(URI_SCHEME) :].split("/")
    if parts == [""]:
        raise not_found(full, "resource")
    scope = parts[0]
    if scope in OTHER_SCOPES:
        raise not_found(full, "resource")
    if scope != "user":
        raise invalid_uri(uri, f"unknown scope {scope!r}")
    if len(parts) < 2 or not parts[1]:
        raise not_found(full, "resource")
    if parts[1] != visibility.user:
        raise denied(full, f"the space of user {parts[1]!r} is not this caller's")
    inner = parts[2:]
    if any(p in ("", ".", "..") or "\\" in p or "\x00" in p for p in inner):
        raise invalid_uri(uri, "empty, '.' or '..' segments are not allowed")
    rel = "/".join(inner)
    check_allowed(rel, full, visibility)
    lexical = paths.root.joinpath(*inner)
    resolved = Path(os.path.realpath(lexical))
    if resolved != paths.root and paths.root not in resolved.parents:
        raise denied(full, "it leads outside the workspace (a symbolic link)")
    if resolved != lexical:
        _no_link_out_of_tree(paths.root, inner, full)
        real = resolved.relative_to(paths.root).as_posix() if resolved != paths.root else ""
        check_allowed(real, full, visibility)
    return Located(paths.uri_prefix.rstrip("/") + (f"/{rel}" if rel else ""), rel, resolved)
