"""What retrieval computes once per text and keeps: embedding vectors and model-made abstracts,
keyed by a digest of what they were made from (so an unchanged memory is never sent again).

One append-only file per kind and space under ``.ovtui/`` (``embeddings/<space>.bin``,
``abstracts/<model>.bin``): records of a 32-byte key, a 4-byte length and the payload. A crash cuts
at most the record being written; the cut tail is dropped before the next append, under the file's
lock, which also lets several processes (``ovtui serve`` and a CLI) share the file: each reads what
the others appended before it appends. Bounded: past ``limit`` bytes the file is rewritten (temp +
rename) with the newest records that fill half of it.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from ovtui.core.errors import LockTimeoutError
from ovtui.storage import fsio
from ovtui.storage.paths import WorkspacePaths

KEY_BYTES = 32
_HEAD = struct.Struct("<32sI")
_LOCK_TIMEOUT_S = 30.0


def digest(*parts: str) -> bytes:
    """The key of a payload made from ``parts`` (a space or model, then the text)."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()


def _records(data: bytes) -> Iterator[tuple[bytes, bytes, int]]:
    """(key, payload, end offset) of each whole record; stops at a cut one."""
    at = 0
    while at + _HEAD.size <= len(data):
        key, size = _HEAD.unpack_from(data, at)
        end = at + _HEAD.size + size
        if end > len(data):
            return
        yield key, data[at + _HEAD.size : end], end
        at = end


class DigestLog:
    """Payloads by key, as one bounded append-only file (see the module's docstring)."""

    def __init__(self, paths: WorkspacePaths, rel: str, *, limit: int) -> None:
        self.paths = paths
        self.path = paths.root / rel
        self.limit = limit
        self._entries: dict[bytes, bytes] = {}
        self._read_to = 0  # the byte of the file this process has read up to (whole records)
        self._inode = -1  # of the file read: a compaction elsewhere replaces it
        self._loaded = False

    @contextmanager
    def _locked(self) -> Iterator[None]:
        fsio.make_dirs(self.path.parent, root=self.paths.root)
        lock_path = fsio.contained(self.path.with_suffix(".lock"), root=self.paths.root)
        lock = FileLock(lock_path, thread_local=False)
        try:
            lock.acquire(timeout=_LOCK_TIMEOUT_S)
        except Timeout:
            shown = self.paths.relative(Path(lock_path))
            raise LockTimeoutError(f"{shown}: still held after {_LOCK_TIMEOUT_S:.0f} s") from None
        try:
            yield
        finally:
            lock.release()

    def _catch_up(self, fd: int) -> int:
        """Read the records appended since this process last read; returns the file's size."""
        info = os.fstat(fd)
        if info.st_ino != self._inode or info.st_size < self._read_to:  # rewritten by a compaction
            self._entries.clear()
            self._read_to, self._inode = 0, info.st_ino
        data = (
            os.pread(fd, info.st_size - self._read_to, self._read_to) if info.st_size > self._read_to else b""
        )
        good = 0
        for key, payload, end in _records(data):
            self._entries.pop(key, None)  # the newest copy last, for the compaction to keep
            self._entries[key] = payload
            good = end
        self._read_to += good
        return info.st_size

    def _open(self) -> int | None:
        try:
            return os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None

    def load(self) -> None:
        """Read the file (once; ``put`` catches up with other writers itself)."""
        if self._loaded:
            return
        fd = self._open()
        if fd is not None:
            try:
                self._catch_up(fd)
            finally:
                os.close(fd)
        self._loaded = True

    def get(self, key: bytes) -> bytes | None:
        self.load()
        return self._entries.get(key)

    def put(self, items: Iterable[tuple[bytes, bytes]]) -> None:
        """Append ``(key, payload)`` records in one write (cutting a tail a crash left first)."""
        data = b"".join(_HEAD.pack(key, len(payload)) + payload for key, payload in items)
        if not data:
            return
        self.load()
        with self._locked():
            fd = fsio.open_in_place(self.path, os.O_RDWR, root=self.paths.root)
            try:
                size = self._catch_up(fd)
                if size != self._read_to:
                    os.ftruncate(fd, self._read_to)  # a record cut by a crash
                os.pwrite(fd, data, self._read_to)
            finally:
                os.close(fd)
            for key, payload, _end in _records(data):
                self._entries.pop(key, None)
                self._entries[key] = payload
            self._read_to += len(data)
            if self._read_to > self.limit:
                self._compact()

    def _compact(self) -> None:
        kept: list[tuple[bytes, bytes]] = []
        budget = self.limit // 2
        for key, payload in reversed(list(self._entries.items())):  # newest first
            budget -= _HEAD.size + len(payload)
            if budget < 0:
                break
            kept.append((key, payload))
        kept.reverse()
        data = b"".join(_HEAD.pack(key, len(payload)) + payload for key, payload in kept)
        fsio.atomic_write_bytes(self.path, data, root=self.paths.root)
        self._entries = dict(kept)
        self._read_to, self._inode = len(data), os.stat(self.path).st_ino

    def __len__(self) -> int:
        self.load()
        return len(self._entries)
