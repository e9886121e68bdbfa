"""Where a plan item's file is: the one derivation of a target from a plan item's memory type, name
and URI, shared by the stager (which writes it) and pending-plan staleness (which only reads it)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime

from ovtui.core.domain import PolicyPlanItem
from ovtui.core.errors import OvtuiError, UnsafePathError
from ovtui.core.names import validate_name
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import MemoryTypeSchema
from ovtui.storage.paths import linkless_path, split_peer


@dataclass(frozen=True)
class Target:
    """Where a plan item's file is: its type, name, path and URI."""

    schema: MemoryTypeSchema
    name: str
    path: str
    uri: str
    rel: str


def plan_target(store: MemoryStore, item: PolicyPlanItem, *, when: datetime | None = None) -> Target:
    """Where a plan item's file is, by its type's declaration (validated; never retargeted): in the
    user's own space, or in the space of the item's peer (``peers/<peer_id>/``; only for a type
    with ``peer_enabled``). ``when`` names a new file of a type whose names carry their creation
    time (events)."""
    schema = store.registry.get(item.memory_type)
    folder = store.type_rel(item.memory_type, item.peer_id)  # the peer checked, and allowed for the type
    name = item.target_name
    if schema.name_field is not None:
        validate_name(name, what=f"{schema.memory_type} {schema.name_field}")
    fields = item.metadata.get("fields")
    creating = item.kind == "upsert" and item.before_content is None and item.base_version is None
    if schema.timestamped and item.target_uri:
        rel = store.paths.relative_of(item.target_uri)
        peer, inner = split_peer(rel)
        if peer != item.peer_id or not schema.holds(inner):
            space_name = f"peer {item.peer_id}'s space" if item.peer_id else "the user's own space"
            raise UnsafePathError(f"{item.target_uri} is not a {schema.memory_type} file in {space_name}")
    elif schema.timestamped and not creating:
        # The name carries a creation time: only the URI can designate an existing file.
        raise OvtuiError(f"a {schema.memory_type} item needs the target_uri of an existing file")
    elif schema.timestamped:
        filename = schema.filename(name, fields=fields if isinstance(fields, dict) else None, when=when)
        rel = f"{folder}/{filename}"
    else:
        # Its file in the current layout or, until it is moved, in a former one (store.rel_for_name).
        given = fields if isinstance(fields, dict) else None
        places = store.rels_for_name(item.memory_type, name, given, item.peer_id)
        named = None
        if item.target_uri:
            with contextlib.suppress(UnsafePathError):  # not a path of ours: the check below names it
                named = store.paths.relative_of(item.target_uri)
        rel = named if named in places else store.rel_for_name(item.memory_type, name, given, item.peer_id)
    path = linkless_path(str(store.paths.root), rel)
    uri = store.paths.uri_prefix + rel
    if item.target_uri and item.target_uri != uri:
        # Never retarget an edit: a URI that disagrees with the name is an error, not a hint.
        raise OvtuiError(f"target URI {item.target_uri} does not match {schema.memory_type} {name!r} ({uri})")
    return Target(schema, name, path, uri, rel)


def record_target_problem(store: MemoryStore, uri: str, memory_type: str) -> str | None:
    """Why a history record may not write ``uri`` (None: it may): the write rule of apply. Only a
    memory file (``WorkspacePaths.memory_rel``) where a declared type keeps its files, of the type
    the record names, reached through no symbolic link."""
    try:
        rel = store.paths.memory_rel(uri)
        schema = store.registry.for_path(rel)
        if schema is None:
            return f"{rel} is not where a declared memory type keeps its files"
        if memory_type and memory_type != schema.memory_type:
            return f"{rel} holds {schema.memory_type}, not {memory_type}"
        linkless_path(str(store.paths.root), rel)
    except UnsafePathError as exc:
        return str(exc)
    return None
