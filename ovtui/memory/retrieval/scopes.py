"""The listings above a user's space: ``viking://`` (the scopes a caller may see: ``user``) and
``viking://user`` (the caller's own space; other users' are never listed). One level each, so a
client's root listing (``viking_browse``'s default, a system prompt's probe) answers without
walking the workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ovtui.memory.retrieval.access import Located, expand
from ovtui.storage.paths import URI_SCHEME

if TYPE_CHECKING:
    from ovtui.memory.retrieval.content import Lister, ListOptions
    from ovtui.storage.paths import WorkspacePaths

USER_SCOPE = f"{URI_SCHEME}user"


def scope_listing(
    lister: Lister, paths: WorkspacePaths, uri: str, options: ListOptions
) -> tuple[list[Any], bool] | None:
    """The entries of ``viking://`` or ``viking://user`` (None: ``uri`` is neither)."""
    full = expand(uri, lister.visibility.user)
    if full == URI_SCHEME:
        child, name = Located(USER_SCOPE, "", paths.root), "user"
    elif full == USER_SCOPE:
        child, name = Located(paths.uri_prefix.rstrip("/"), "", paths.root), lister.visibility.user
    else:
        return None
    if options.offset > 0:
        return [], False
    if options.simple:
        return [child.uri], False
    entry = lister.entry(child, options, name if options.recursive else None)
    if "name" in entry:
        entry["name"] = name
    return [entry], False
