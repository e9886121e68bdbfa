"""Revert a history record: apply its inverse through the same journal, and record that too.

add → delete the file; update → restore the ``before`` content and fields with ``version`` set to
the current one + 1 (a revert is a write); delete → recreate the file (version + 1). A file that
changed after the record (its content or meaningful fields are no longer the record's ``after``;
the ``version`` write counter and trace fields do not count, so records can be reverted newest
first one after another) is a conflict: the revert is refused, naming every such file, unless
forced. Relations (``links``, ``backlinks``) are sets later applies add to — a case file gains a
link to each experience its runs fed — so they are no conflict: a revert takes out the links the
record added, puts back those it removed, and keeps what changed after it. A forced revert says so
in its own record. A record already undone by a revert (that was not itself reverted) is refused,
naming that revert. A record that fails verification (``memory/chain.py``: edited, moved, or
writing anything but a memory file of its declared type) is refused, forced or not.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ovtui.core.errors import MemoryFormatError, OvtuiError, RevertConflictError
from ovtui.core.fileformat import MemoryFile, parse_memory
from ovtui.memory.chain import ChainVerifier
from ovtui.memory.history import HistoryStore, new_history_id
from ovtui.memory.links import RELATION_FIELDS, link_key, merge_links
from ovtui.memory.memory_diff import (
    FileChange,
    MemoryDiff,
    Review,
    build_memory_diff,
    same_memory,
    same_memory_file,
)
from ovtui.memory.store import MemoryStore
from ovtui.memory.transaction import commit_record, prepare


@dataclass
class RevertResult:
    history_id: str
    reverted: str
    written_uris: list[str] = field(default_factory=list)
    deleted_uris: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # overridden by force
    dry_run: bool = False


@dataclass(frozen=True)
class _Target:
    uri: str
    memory_type: str
    expected: str | None  # what the record left in place (None: absent)
    restore: str | None  # what the record found (None: absent)


def _targets(record: MemoryDiff) -> list[_Target]:
    ops = record.operations
    return [
        *(_Target(o.uri, o.memory_type, o.after, None) for o in ops.adds),
        *(_Target(o.uri, o.memory_type, o.after, o.before) for o in ops.updates),
        *(_Target(o.uri, o.memory_type, None, o.deleted_content) for o in ops.deletes),
    ]


def _version_of(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        memory = parse_memory(text)
    except MemoryFormatError:
        return None
    raw = memory.fields.get("version")
    return raw if isinstance(raw, int) and not isinstance(raw, bool) else None


def _parsed(text: str | None) -> MemoryFile | None:
    if text is None:
        return None
    try:
        return parse_memory(text)
    except MemoryFormatError:
        return None


def _links(memory: MemoryFile | None, key: str) -> list[dict[str, Any]]:
    value = memory.fields.get(key) if memory is not None else None
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _reverted_relations(
    restore: MemoryFile, current: str | None, expected: str | None
) -> dict[str, list[dict[str, Any]]]:
    """Per relation field, ``current``'s links with the record's own change to them undone: the
    links it added taken out, those it removed put back; what others changed since stays."""
    now, then = _parsed(current), _parsed(expected)
    if now is None:
        return {}  # nothing to merge with: the record's ``before`` as it was
    out: dict[str, list[dict[str, Any]]] = {}
    for key in RELATION_FIELDS:
        before = {link_key(x): x for x in _links(restore, key)}
        after = {link_key(x) for x in _links(then, key)}
        kept = [x for x in _links(now, key) if link_key(x) in before or link_key(x) not in after]
        removed = [x for k, x in before.items() if k not in after]
        out[key] = merge_links(kept, removed)
    return out


def _restored(restore: str, current: str | None, expected: str | None) -> str:
    """``restore``'s text, its relations those of ``current`` with the record's change undone, and
    its version moved past every version the file has had."""
    memory = parse_memory(restore, source="history record")
    relations = _reverted_relations(memory, current, expected)
    fields = dict(memory.fields)
    for key, links in relations.items():
        if links:
            fields[key] = links
        else:
            fields.pop(key, None)
    if "version" in fields:
        seen = [v for v in (_version_of(current), _version_of(expected), memory.version) if v is not None]
        fields["version"] = max(seen) + 1
    if fields == memory.fields:
        return restore
    return memory.model_copy(update={"fields": fields}).render()


def _without_relations(memory: MemoryFile) -> MemoryFile:
    fields = {k: v for k, v in memory.fields.items() if k not in RELATION_FIELDS}
    return MemoryFile(content=memory.content, fields=fields)


def _unchanged(current: str | None, expected: str | None) -> bool:
    """``current`` is what the record left, links added since aside."""
    if current is None or expected is None:
        return current is expected
    if same_memory(current, expected):
        return True
    now, then = _parsed(current), _parsed(expected)
    if now is None or then is None:
        return False
    return same_memory_file(_without_relations(now), _without_relations(then))


def reverted_by(history: HistoryStore, record_id: str) -> str | None:
    """The revert that currently undoes ``record_id``: the newest one that was not itself reverted."""
    reverts = [e for e in history.list(kind="revert") if not e.dry_run]
    undone = {e.reverts for e in reverts}
    return next((e.id for e in reverts if e.reverts == record_id and e.id not in undone), None)


def _read_current(store: MemoryStore, uri: str) -> tuple[Path, str | None]:
    path = store.paths.path_for(uri)
    if path.exists():
        return path, store.read_text(path)
    return path, None


def revert(
    store: MemoryStore,
    record_id: str,
    *,
    dry_run: bool = False,
    force: bool = False,
    lock_timeout: float | None = None,
) -> RevertResult:
    """Apply the inverse of history record ``record_id`` (a full id or a unique prefix)."""
    history = HistoryStore(store.paths)
    record_id = history.resolve(record_id)
    with store.lock.hold("revert", lock_timeout):
        prepare(store.paths)
        record = history.get(record_id)
        if record.dry_run:
            raise OvtuiError(
                f"history record {record_id} is a dry run: it wrote no memory file, "
                "so there is nothing to revert"
            )
        distrust = ChainVerifier(store).check_record(record_id)
        if distrust:
            more = f" (and {len(distrust) - 1} more: see `ovtui history verify`)" if len(distrust) > 1 else ""
            raise OvtuiError(f"cannot revert {record_id}, not even with --force: {distrust[0]}{more}")
        already = reverted_by(history, record_id)
        if already is not None:
            raise OvtuiError(f"history record {record_id} is already reverted by {already}")
        changes: list[FileChange] = []
        conflicts: list[str] = []
        for target in _targets(record):
            path, current = _read_current(store, target.uri)
            if not _unchanged(current, target.expected):
                conflicts.append(store.paths.relative(path))
            if target.restore is None:
                after = None
            elif current is not None and same_memory(current, target.restore):
                after = current  # already says what the record found: nothing to write
            else:
                after = _restored(target.restore, current, target.expected)
            changes.append(FileChange(target.uri, target.memory_type, current, after))
        if conflicts and not force:
            raise RevertConflictError(
                f"cannot revert {record_id}: changed after the record: {', '.join(conflicts)}",
                conflicts=conflicts,
            )
        now = datetime.now(UTC)
        new_id = new_history_id(now)
        metadata = {"forced": True, "conflicts": conflicts} if conflicts else {}
        diff = build_memory_diff(
            changes,
            kind="dry_run" if dry_run else "revert",
            trace_id=uuid.uuid4().hex,
            archive_uri=history.record_uri(new_id),
            review=Review(plan_id=None, dry_run=dry_run),
            reverts=record_id,
            metadata=metadata,
            now=now,
        )
        commit_record(store.paths, diff, new_id, dry_run=dry_run)
    effective = [c for c in changes if c.before != c.after]
    return RevertResult(
        history_id=new_id,
        reverted=record_id,
        written_uris=[c.uri for c in effective if c.after is not None],
        deleted_uris=[c.uri for c in effective if c.after is None],
        conflicts=conflicts,
        dry_run=dry_run,
    )


async def arevert(
    store: MemoryStore, record_id: str, *, dry_run: bool = False, force: bool = False
) -> RevertResult:
    """``revert`` for the event loop (the app): file work and the lock wait run in a thread."""
    return await asyncio.to_thread(revert, store, record_id, dry_run=dry_run, force=force)
