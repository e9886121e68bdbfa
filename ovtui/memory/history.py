"""The history of applied plans: ``history/<YYYYMMDDTHHMMSSffffff>_<shortid>/memory_diff.json``.

Listing must stay fast with thousands of records, so an append-only ``history/index.jsonl`` holds
one summary line per record. The index is derived data: the record folders are the truth. Each
listing compares the index with a scandir of the folder (cheap) and appends the lines it lacks,
or rewrites it when it holds lines for folders that are gone or lines that do not parse.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import ValidationError

from ovtui.core.bounded_json import parse_json
from ovtui.core.bounds import MAX_RECORD_BYTES
from ovtui.core.errors import LockTimeoutError, OvtuiError
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.storage import fsio
from ovtui.storage.locks import WorkspaceLock
from ovtui.storage.paths import HISTORY_INDEX_FILE, RECORD_FILE, WorkspacePaths
from ovtui.storage.reading import open_for_reading, read_model

HISTORY_ID = re.compile(r"^\d{8}T\d{12}_[0-9a-f]{6}$")


def new_history_id(now: datetime | None = None) -> str:
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%S%f")
    return f"{stamp}_{secrets.token_hex(3)}"


@dataclass
class HistoryEntry:
    """One index line: enough to list and filter without opening the record."""

    id: str
    extracted_at: str
    kind: str
    adds: int = 0
    updates: int = 0
    deletes: int = 0
    uris: list[str] = field(default_factory=list)
    dry_run: bool = False
    plan_id: str | None = None
    reverts: str | None = None
    trace_id: str = ""

    @classmethod
    def from_record(cls, record_id: str, record: MemoryDiff) -> HistoryEntry:
        return cls(
            id=record_id,
            extracted_at=record.extracted_at,
            kind=record.kind,
            adds=record.summary.total_adds,
            updates=record.summary.total_updates,
            deletes=record.summary.total_deletes,
            uris=record.operations.uris(),
            dry_run=record.dry_run,
            plan_id=record.review.plan_id,
            reverts=record.reverts,
            trace_id=record.trace_id,
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HistoryEntry:
        counts = data.get("counts", {})
        return cls(
            id=str(data["id"]),
            extracted_at=str(data.get("extracted_at", "")),
            kind=str(data.get("kind", "apply")),
            adds=int(counts.get("adds", 0)),
            updates=int(counts.get("updates", 0)),
            deletes=int(counts.get("deletes", 0)),
            uris=[str(u) for u in data.get("uris", [])],
            dry_run=bool(data.get("dry_run", False)),
            plan_id=data.get("plan_id"),
            reverts=data.get("reverts"),
            trace_id=str(data.get("trace_id", "")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "extracted_at": self.extracted_at,
            "kind": self.kind,
            "counts": {"adds": self.adds, "updates": self.updates, "deletes": self.deletes},
            "uris": list(self.uris),
            "dry_run": self.dry_run,
            "plan_id": self.plan_id,
            "reverts": self.reverts,
            "trace_id": self.trace_id,
        }

    def line(self) -> str:
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n"

    def matches_uri(self, uri: str) -> bool:
        return any(u == uri or u.endswith("/" + uri.lstrip("/")) for u in self.uris)


@dataclass
class _IndexSeen:
    """What a reader parsed of an index file: its first ``size`` bytes, ending with ``edge``."""

    inode: int
    size: int
    entries: dict[str, HistoryEntry]
    bad: bool
    edge: bytes

    def still_prefix(self, handle: BinaryIO, info: os.stat_result) -> bool:
        if info.st_ino != self.inode or info.st_size < self.size:
            return False
        handle.seek(self.size - len(self.edge))
        return handle.read(len(self.edge)) == self.edge


def _edge(complete: bytes, seen: _IndexSeen | None) -> bytes:
    if len(complete) >= EDGE_BYTES or seen is None:
        return complete[-EDGE_BYTES:]
    return (seen.edge + complete)[-EDGE_BYTES:]


EDGE_BYTES = 64
_INDEX_CACHE: dict[str, _IndexSeen] = {}
# Bytes of the index's end read first for a preview of the newest records (a line is ~300 bytes).
TAIL_BYTES_PER_RECORD = 512


def _parse_lines(data: bytes, entries: dict[str, HistoryEntry]) -> bool:
    """Add the index lines in ``data`` to ``entries``; True when some line did not parse."""
    bad = False
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            entry = HistoryEntry.from_json(parse_json(line, source=HISTORY_INDEX_FILE))
        except (ValueError, KeyError, TypeError, AttributeError):
            bad = True
            continue
        entries[entry.id] = entry
    return bad


class HistoryStore:
    def __init__(self, paths: WorkspacePaths) -> None:
        self.paths = paths
        self.root = paths.root
        self.dir = paths.history
        self.index_path = paths.root / HISTORY_INDEX_FILE

    # --- locations -------------------------------------------------------------------------
    def check_id(self, record_id: str) -> str:
        if not HISTORY_ID.match(record_id):
            raise OvtuiError(
                f"{record_id!r} is not a history record id (expected YYYYMMDDTHHMMSSffffff_xxxxxx)"
            )
        return record_id

    def record_path(self, record_id: str) -> Path:
        return self.dir / self.check_id(record_id) / RECORD_FILE

    def record_relpath(self, record_id: str) -> str:
        return f"{self.dir.name}/{self.check_id(record_id)}/{RECORD_FILE}"

    def record_uri(self, record_id: str) -> str:
        return f"{self.paths.uri_prefix}{self.dir.name}/{self.check_id(record_id)}"

    # --- writing ---------------------------------------------------------------------------
    def append_index(self, *entries: HistoryEntry) -> None:
        """Append lines with one O_APPEND write: concurrent appenders never interleave inside a line.

        Not fsynced: the index is rebuilt from the folders whenever it misses a line.
        """
        if not entries:
            return
        data = "".join(e.line() for e in entries).encode("utf-8")
        fd = fsio.open_in_place(self.index_path, os.O_RDWR | os.O_APPEND, root=self.root)
        try:
            size = os.fstat(fd).st_size
            # A line torn by a crash must not swallow the next one.
            if size and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data
            fsio.write_all(fd, data, path=self.index_path)
        finally:
            os.close(fd)
        fsio.crash_point()

    # --- reading ---------------------------------------------------------------------------
    def get(self, record_id: str) -> MemoryDiff:
        path = self.record_path(record_id)
        rel = self.paths.relative(path)
        try:
            return read_model(path, MemoryDiff, MAX_RECORD_BYTES, what="the record", shown=rel)
        except FileNotFoundError:
            raise OvtuiError(f"no history record {record_id} ({rel} does not exist)") from None
        except (IsADirectoryError, ValidationError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise OvtuiError(f"{rel}: not a valid memory_diff record: {first}") from None

    def resolve(self, ref: str) -> str:
        """A full id from an id or a unique prefix/suffix of one (what a person types)."""
        if HISTORY_ID.match(ref):
            return ref
        found = [i for i in self.ids_on_disk() if i.startswith(ref) or i.endswith(ref)] if ref else []
        if len(found) == 1:
            return found[0]
        if not found:
            raise OvtuiError(f"no history record matches {ref!r}")
        raise OvtuiError(f"{ref!r} matches {len(found)} history records: {', '.join(found[:5])}…")

    def ids_on_disk(self) -> set[str]:
        if not self.dir.is_dir():
            return set()
        with os.scandir(self.dir) as entries:
            return {e.name for e in entries if HISTORY_ID.match(e.name) and e.is_dir(follow_symlinks=False)}

    def _read_index(self) -> tuple[dict[str, HistoryEntry], bool]:
        """Entries by id, and whether some line was unreadable.

        The index only grows by appends between rewrites (which replace the file), so a reader that
        saw it before parses just the new tail: a running app re-lists after every apply.
        """
        try:
            with open_for_reading(self.index_path) as handle:
                info = os.fstat(handle.fileno())
                seen = _INDEX_CACHE.get(str(self.index_path))
                if seen is not None and not seen.still_prefix(handle, info):
                    seen = None
                if seen is not None:
                    handle.seek(seen.size)
                    tail = handle.read()
                    entries, bad = dict(seen.entries), seen.bad
                else:
                    tail, entries, bad = handle.read(), {}, False
        except FileNotFoundError:
            _INDEX_CACHE.pop(str(self.index_path), None)
            return {}, False
        bad = _parse_lines(tail, entries) or bad
        edge = _edge(tail, seen)
        _INDEX_CACHE[str(self.index_path)] = _IndexSeen(info.st_ino, info.st_size, entries, bad, edge)
        return dict(entries), bad

    def newest(self, count: int) -> list[HistoryEntry]:
        """About the newest ``count`` records, newest first, read from the index's last lines only:
        a preview to show at once while ``list`` reads the whole index (and repairs it).

        Records are appended as they are written, so the last lines hold the newest; what the
        preview gets wrong (a line another process appended out of order, a folder deleted by hand)
        the full listing corrects.
        """
        if count <= 0:
            return []
        try:
            with open_for_reading(self.index_path) as handle:
                size = os.fstat(handle.fileno()).st_size
                want = count * TAIL_BYTES_PER_RECORD
                while True:
                    start = max(size - want, 0)
                    handle.seek(start)
                    tail = handle.read(size - start)
                    if start == 0 or tail.count(b"\n") > count:
                        break
                    want *= 2  # long lines (records touching many files): read further back
        except FileNotFoundError:
            return []
        if start:
            tail = tail[tail.index(b"\n") + 1 :]  # the first line is cut: the full listing has it
        entries: dict[str, HistoryEntry] = {}
        _parse_lines(tail, entries)
        return sorted(entries.values(), key=lambda e: e.id, reverse=True)[:count]

    def entries(self) -> dict[str, HistoryEntry]:
        """Every record's index entry, repairing the index when it disagrees with the folders."""
        indexed, bad = self._read_index()
        on_disk = self.ids_on_disk()
        missing = sorted(on_disk - indexed.keys())
        gone = indexed.keys() - on_disk
        added: list[HistoryEntry] = []
        for record_id in missing:
            try:
                added.append(HistoryEntry.from_record(record_id, self.get(record_id)))
            except OvtuiError:
                continue  # an unreadable record is reported by `get`, not listed
        for entry in added:
            indexed[entry.id] = entry
        for record_id in gone:
            del indexed[record_id]
        if bad or gone or added:
            self._repair(indexed, rewrite=bool(bad or gone), added=added)
        return indexed

    def _repair(self, entries: dict[str, HistoryEntry], *, rewrite: bool, added: list[HistoryEntry]) -> None:
        """Bring the index in line with the folders, only while holding the workspace lock (a reader
        never writes without it); when someone else holds it, or the disk takes no writes (full,
        read-only), the listing is right anyway and a later listing repairs it."""
        lock = WorkspaceLock(self.paths.state, root=self.root)
        try:
            lock.acquire("repair history index", timeout=0)
        except (LockTimeoutError, OSError):
            return
        try:
            if rewrite:
                self.rebuild_index(entries)
            else:
                self.append_index(*added)
        except OSError:
            pass  # the index is only a cache of the folders: the next listing tries again
        finally:
            lock.release()

    def rebuild_index(self, entries: dict[str, HistoryEntry] | None = None) -> None:
        """Rewrite the index from ``entries`` (default: from every record folder)."""
        if entries is None:
            entries = {}
            for record_id in self.ids_on_disk():
                try:
                    entries[record_id] = HistoryEntry.from_record(record_id, self.get(record_id))
                except OvtuiError:
                    continue
        text = "".join(entries[i].line() for i in sorted(entries))
        fsio.atomic_write_text(self.index_path, text, root=self.root, sync_dir=False)

    def list(
        self,
        *,
        kind: str | None = None,
        uri: str | None = None,
        text: str | None = None,
        limit: int | None = None,
    ) -> list[HistoryEntry]:
        """Records newest first, filtered by kind, by a URI they touch, and by text in the record."""
        result: list[HistoryEntry] = []
        if limit is not None and limit <= 0:
            return result
        needle = text.lower() if text else None
        for entry in sorted(self.entries().values(), key=lambda e: e.id, reverse=True):
            if kind and entry.kind != kind:
                continue
            if uri and not entry.matches_uri(uri):
                continue
            if needle and not self._contains(entry, needle):
                continue
            result.append(entry)
            if limit is not None and len(result) >= limit:
                break
        return result

    def _contains(self, entry: HistoryEntry, needle: str) -> bool:
        if needle in entry.line().lower():
            return True
        try:
            return needle in self.record_path(entry.id).read_text(encoding="utf-8").lower()
        except (OSError, UnicodeDecodeError):
            return False
