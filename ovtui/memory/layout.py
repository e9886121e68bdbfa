"""Files in a former layout of their type, found and moved to the current one.

Preferences once lived in ``memories/preferences/<topic>.md``; OpenViking files them under whose
preference it is, ``memories/preferences/<user>/<topic>.md`` (a peer's under
``peers/<peer>/memories/preferences/<peer>/<topic>.md``), and that is where ovtui writes them now. A
file in the former layout keeps working — listed, loaded, checked and edited in place
(``MemoryStore.rel_for_name``) — but OpenViking does not see it, so ``ovtui check`` reports it and
``ovtui check --fix`` moves it (``move_former_files``).

A move is one journaled transaction under the workspace lock and one History record (kind
``migrate``): every file moved is a delete of the old file and an add of the new one — the same
body, the ``fill`` fields (the owner) added — so ``ovtui revert`` puts them all back. A file whose
new place is taken, or that cannot be read, is not moved: it is listed in the record's
``skipped_operations`` and in the result.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovtui.core.errors import OvtuiError
from ovtui.core.fileformat import MemoryFile, parse_memory
from ovtui.memory.history import HistoryStore, new_history_id
from ovtui.memory.memory_diff import (
    ITEM_REFUSED,
    TARGET_EXISTS,
    FileChange,
    Review,
    SkippedOperation,
    build_memory_diff,
)
from ovtui.memory.store import MemoryStore
from ovtui.memory.transaction import commit_record, prepare
from ovtui.memory.types import MemoryTypeSchema
from ovtui.storage.paths import split_peer


@dataclass(frozen=True)
class FormerFile:
    """A memory file in a former layout of its type, in the user's space or a peer's."""

    schema: MemoryTypeSchema
    rel: str
    peer_id: str | None


@dataclass(frozen=True)
class SpaceLayouts:
    """One type's files in one space, by layout: the former ones and how many are current."""

    schema: MemoryTypeSchema
    peer_id: str | None
    former: list[FormerFile]
    current: int


@dataclass
class MoveResult:
    history_id: str | None = None
    moved: dict[str, str] = field(default_factory=dict)  # old relative path → new one
    skipped: list[SkippedOperation] = field(default_factory=list)


def layout_shape(schema: MemoryTypeSchema, template: str) -> str:
    """A layout in words: ``memories/preferences/<user>/<topic>.md``."""
    return f"{schema.directory}/{template}".replace("{", "<").replace("}", ">")


def space_layouts(store: MemoryStore) -> list[SpaceLayouts]:
    """For every type with a former layout, in the user's space and each peer's: its files there."""
    found: list[SpaceLayouts] = []
    for memory_type in store.registry.names():
        schema = store.registry.get(memory_type)
        if not schema.former_filename_templates:
            continue
        for peer in [None, *store.peers()] if schema.peer_enabled else [None]:
            former: list[FormerFile] = []
            current = 0
            for path in store.list_paths(memory_type, peer):
                rel = store.paths.relative(path)
                if schema.holds_former(split_peer(rel)[1]):
                    former.append(FormerFile(schema, rel, peer))
                else:
                    current += 1
            if former:
                found.append(SpaceLayouts(schema, peer, former, current))
    return found


def _moved_text(store: MemoryStore, former: FormerFile, text: str) -> tuple[str, str]:
    """Where a former file goes (workspace-relative) and its text there: the same body and fields,
    the ``fill`` fields it lacks given first (as OpenViking orders them)."""
    schema = former.schema
    memory = parse_memory(text, source=former.rel)
    stem = Path(former.rel).stem
    named = memory.fields.get(schema.name_field) if schema.name_field else None
    name = named if isinstance(named, str) and named else stem
    filled = schema.filled(memory.fields, store.owner(former.peer_id))
    fields: dict[str, Any] = {d.name: filled[d.name] for d in schema.fields if d.fill and d.name in filled}
    fields.update((k, v) for k, v in filled.items() if k not in fields)
    folder = store.type_rel(schema.memory_type, former.peer_id)
    rel = f"{folder}/{schema.filename(name, fields=fields)}"
    return rel, MemoryFile(content=memory.content, fields=fields).render()


def move_former_files(store: MemoryStore, *, lock_timeout: float | None = None) -> MoveResult:
    """Move every file in a former layout to its type's current one, in one History record."""
    result = MoveResult()
    with store.lock.hold("moving memory files to the current layout", lock_timeout):
        prepare(store.paths)
        changes: list[FileChange] = []
        taken: set[str] = set()
        for space in space_layouts(store):
            for former in space.former:
                memory_type = former.schema.memory_type
                old_uri = store.paths.uri_prefix + former.rel
                try:
                    text = store.read_text(store.paths.root / former.rel)
                    rel, moved = _moved_text(store, former, text)
                except (OvtuiError, OSError) as exc:
                    result.skipped.append(
                        SkippedOperation(
                            memory_type=memory_type, uri=old_uri, reason_code=ITEM_REFUSED, reason=str(exc)
                        )
                    )
                    continue
                if rel in taken or (store.paths.root / rel).exists():
                    reason = f"{rel} exists already: merge the two files by hand, then run again"
                    result.skipped.append(
                        SkippedOperation(
                            memory_type=memory_type, uri=old_uri, reason_code=TARGET_EXISTS, reason=reason
                        )
                    )
                    continue
                taken.add(rel)
                new_uri = store.paths.uri_prefix + rel
                changes += [
                    FileChange(new_uri, memory_type, None, moved),
                    FileChange(old_uri, memory_type, text, None),
                ]
                result.moved[former.rel] = rel
        if not changes:
            return result
        history = HistoryStore(store.paths)
        record_id = new_history_id()
        record = build_memory_diff(
            changes,
            kind="migrate",
            trace_id=uuid.uuid4().hex,
            archive_uri=history.record_uri(record_id),
            review=Review(),
            metadata={"moved": dict(result.moved)},
            skipped=result.skipped,
        )
        commit_record(store.paths, record, record_id)
        result.history_id = record_id
    return result
