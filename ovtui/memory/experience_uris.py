"""Which URIs name an experience of the workspace's user, by OpenViking's rule: what its agent
evolution routes take, and what counts when a session's tool calls read one."""

from __future__ import annotations

from ovtui.storage.paths import URI_SCHEME

HOME_ALIAS = f"{URI_SCHEME}~/"
SIDECARS = frozenset({".abstract.md", ".overview.md", ".relations.json"})


def owned_experience_uri(uri: str, user: str) -> str | None:
    """``uri`` (the home alias ``viking://~/…`` expanded) when it names an experience of ``user``:
    under ``viking://user/<user>/memories/experiences/`` with at least one segment after it, no
    query or fragment, no empty, ``.`` or ``..`` segment, not a sidecar file; else None."""
    if uri.startswith(HOME_ALIAS):
        uri = f"{URI_SCHEME}user/{user}/{uri[len(HOME_ALIAS) :]}"
    prefix = f"{URI_SCHEME}user/{user}/memories/experiences/"
    if "?" in uri or "#" in uri or not uri.startswith(prefix):
        return None
    segments = uri[len(prefix) :].split("/")
    if any(s in ("", ".", "..") for s in segments) or segments[-1] in SIDECARS:
        return None
    return uri
