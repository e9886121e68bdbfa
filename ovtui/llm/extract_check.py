"""Checking a model's memory operations before anything is accepted (used by ExtractLoop).

An operation names its file by the type's name field; a ``uri`` it also gives must be that same
file (an edit is never moved to another file). Names are validated as path components and every
URI goes through ``WorkspacePaths.path_for``. SEARCH/REPLACE blocks are applied to the current
text with the field's merge op, so a block that does not match exactly once is reported with its
number and the reason.

Peers: when the loop is given peers (a session's peers its MemoryPolicy allows), an item's
``peer_id`` puts its file in that peer's space (``peers/<peer_id>/…``) — resolved, read-before-edit
and SEARCH/REPLACE exactly as the user's own — for a ``peer_enabled`` type (another type ignores it:
its memories are the user's). A peer id that is not one of them, and a ``uri`` in another space
than the ``peer_id`` designates, are problems for the repair round, never retargeted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ovtui.core.errors import ConfigError, OvtuiError, PatchError, UnsafePathError
from ovtui.core.fileformat import MemoryFile
from ovtui.core.names import validate_name
from ovtui.llm.loop_tools import check_space
from ovtui.memory.merge_ops import merge_value
from ovtui.memory.store import MemoryStore
from ovtui.memory.types import MemoryTypeSchema

DELETES = "deletes"
PEER_FIELD = "peer_id"


@dataclass
class ExtractedOperation:
    """One accepted create/update. ``merged`` is the file's fields after the merge ops (content
    resolved from SEARCH/REPLACE blocks); ``uri`` is None for add-only types (the caller names them)."""

    memory_type: str
    name: str
    uri: str | None
    before: MemoryFile | None
    fields: dict[str, Any]
    merged: dict[str, Any]
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def content(self) -> str:
        return str(self.merged.get("content") or "")


@dataclass
class ExtractedDelete:
    memory_type: str
    uri: str
    before: MemoryFile
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExtractResult:
    operations: dict[str, list[ExtractedOperation]]
    deletes: list[ExtractedDelete]
    files_read: list[str]
    calls: int
    # Tokens the endpoint reported for these calls (a cached answer cost none this time).
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def delete_uris(self) -> list[str]:
        return [d.uri for d in self.deletes]

    def of(self, memory_type: str) -> list[ExtractedOperation]:
        return self.operations.get(memory_type, [])


@dataclass
class Checked:
    """The verdict on one answer: what is accepted, what must be shown first, what must be fixed."""

    operations: dict[str, list[ExtractedOperation]] = field(default_factory=dict)
    deletes: list[ExtractedDelete] = field(default_factory=list)
    unread: dict[str, MemoryFile] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


# A caller's own check of an accepted operation (a case's rubric must be a JSON rubric): the
# problem in words, or None. A problem goes to the repair round like any other.
ItemCheck = Callable[[ExtractedOperation], str | None]


class AnswerChecker:
    def __init__(
        self,
        store: MemoryStore,
        schemas: dict[str, MemoryTypeSchema],
        item_extras: set[str],
        item_checks: Mapping[str, ItemCheck] | None = None,
        peers: Sequence[str] = (),
    ) -> None:
        self.store = store
        self.schemas = schemas
        self.item_extras = item_extras
        self.item_checks = dict(item_checks or {})
        self.peers = tuple(peers)

    def current(self, uri: str, seen: dict[str, MemoryFile]) -> MemoryFile | None:
        if uri in seen:
            return seen[uri]
        try:
            return self.store.read_uri(uri)
        except OSError as exc:
            raise OvtuiError(f"cannot read {uri}: {exc}") from exc

    def check(self, data: dict[str, Any], seen: dict[str, MemoryFile]) -> Checked:
        out = Checked()
        targets: dict[str, str] = {}
        for memory_type, schema in self.schemas.items():
            accepted = out.operations.setdefault(memory_type, [])
            for index, raw in enumerate(data.get(memory_type) or []):
                label = f"{memory_type}[{index}]"
                op = self._check_item(label, schema, dict(raw), seen, targets, out)
                if op is None:
                    continue
                check = self.item_checks.get(memory_type)
                problem = check(op) if check is not None else None
                if problem:
                    out.problems.append(f"{label} ({op.name}): {problem}")
                else:
                    accepted.append(op)
        for index, raw in enumerate(data.get(DELETES) or []):
            self._check_delete(f"{DELETES}[{index}]", dict(raw), seen, targets, out)
        return out

    def _check_item(
        self,
        label: str,
        schema: MemoryTypeSchema,
        item: dict[str, Any],
        seen: dict[str, MemoryFile],
        targets: dict[str, str],
        out: Checked,
    ) -> ExtractedOperation | None:
        given_uri = item.pop("uri", None)
        extras = {k: item.pop(k) for k in list(item) if k in self.item_extras}
        # A one-file type (profile) has no name field: its type names it.
        name = str(item.get(schema.name_field, "")) if schema.name_field else schema.memory_type
        peer = self._peer(label, schema, extras.get(PEER_FIELD), out)
        if peer is False:
            return None
        try:
            validate_name(name, what=f"{label}.{schema.name_field}")
            uri = (
                None
                if schema.operation_mode == "add_only"
                else self.store.uri_for_name(schema.memory_type, name, item, peer)
            )
        except (UnsafePathError, ConfigError) as exc:  # ConfigError: a filename placeholder is missing
            out.problems.append(str(exc))
            return None
        if given_uri is not None and given_uri != uri:
            out.problems.append(self._retarget_problem(label, schema, name, uri, str(given_uri), peer))
            return None
        current = None
        if uri is not None:
            if uri in targets:
                out.problems.append(
                    f"{label}: {uri} is already changed by {targets[uri]}; put all changes to one "
                    "file in one item"
                )
                return None
            targets[uri] = label
            current = self.current(uri, seen)
            if current is not None and uri not in seen:
                out.unread[uri] = current
                return None
        before = {"content": current.content, **current.fields} if current is not None else {}
        merged = dict(before)
        for key, value in item.items():
            decl = schema.field(key)
            try:
                merged[key] = merge_value(decl.merge_op if decl else "replace", before.get(key), value)
            except PatchError as exc:
                hint = "" if current is not None else " (the file does not exist yet: give its complete text)"
                out.problems.append(f"{label} ({name}) field {key!r}: {exc}{hint}")
                return None
        return ExtractedOperation(schema.memory_type, name, uri, current, item, merged, extras)

    def _peer(
        self, label: str, schema: MemoryTypeSchema, given: object, out: Checked
    ) -> str | Literal[False] | None:
        """Whose space an item's file is in: a peer's id, None for the user's own, or False (a
        problem was recorded). Without peers given, ``peer_id`` is not this checker's business."""
        if not self.peers or given in (None, "") or not schema.peer_enabled:
            return None
        if given not in self.peers:
            out.problems.append(
                f"{label}.{PEER_FIELD}: {str(given)[:40]!r} is not a peer of this conversation; "
                f"the peers are {', '.join(self.peers)} (leave {PEER_FIELD} out for the user's own memories)"
            )
            return False
        return str(given)

    def _retarget_problem(
        self,
        label: str,
        schema: MemoryTypeSchema,
        name: str,
        uri: str | None,
        given: str,
        peer: str | None = None,
    ) -> str:
        try:
            self.store.paths.path_for(given)
            given_peer = self.store.peer_of_uri(given)
        except UnsafePathError as exc:
            return f"{label}.uri: {exc}"
        if self.peers and given_peer != peer:
            return (
                f"{label}: uri {given} is in {_space(given_peer)} but {PEER_FIELD} designates "
                f"{_space(peer)} ({uri}); an edit is never moved to another space: give the "
                f"{PEER_FIELD} of the file's space (none for the user's own)"
            )
        # (add-only items have no uri field in their schema, so ``uri`` is None only defensively)
        return (
            f"{label}: {schema.name_field} {name!r} designates {uri or 'a new file'} but uri points at "
            f"{given}; an edit is never moved to another file: use the name of the file you mean to change"
        )

    def _check_delete(
        self,
        label: str,
        item: dict[str, Any],
        seen: dict[str, MemoryFile],
        targets: dict[str, str],
        out: Checked,
    ) -> None:
        uri = str(item.pop("uri", ""))
        extras = {k: item.pop(k) for k in list(item) if k in self.item_extras}
        try:
            schema = self.store.schema_for_uri(uri)
            check_space(self.store, uri, self.peers)
        except UnsafePathError as exc:
            out.problems.append(f"{label}.uri: {exc}")
            return
        if schema.memory_type not in self.schemas or schema.operation_mode == "add_only":
            out.problems.append(
                f"{label}: {uri} is a {schema.memory_type} file, which this step may not delete"
            )
            return
        if uri in targets:
            out.problems.append(f"{label}: {uri} is both changed by {targets[uri]} and deleted")
            return
        targets[uri] = label
        current = self.current(uri, seen)
        if current is None:
            out.problems.append(f"{label}: there is no file at {uri} to delete")
        elif uri not in seen:
            out.unread[uri] = current
        else:
            out.deletes.append(ExtractedDelete(schema.memory_type, uri, current, extras))


def _space(peer: str | None) -> str:
    return f"peer {peer}'s space" if peer else "the user's own space"
