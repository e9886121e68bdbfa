"""The use ledger: which memories were used, by whom, and how it went (``memory.ledger_state``).

Every record (a use, an outcome) is appended to ``.ovtui/ledger.jsonl`` — one JSON line each, one
write per call, so a crash cuts at most that call's last line, and an append after a cut line
starts on a line of its own. Appends never rewrite a memory file, so using a memory makes no
History record. Once an append takes the log past ``LEDGER_COMPACT_BYTES`` it is folded into
``.ovtui/ledger.json`` and replaced by an empty one, so what is read is the summary plus at most
about that much log. Appends and compactions share ``.ovtui/ledger.lock``, so no record lands
between reading the log and replacing it. Each log begins with a line giving its generation; the
summary records which generation it folded and up to which byte. Compaction writes the summary
first and replaces the log second, so a crash between the two leaves a summary whose folded bytes
the reader skips in the log it names: no record lost or counted twice. Uses of a memory file that
no longer exists are dropped when the log is folded.

Reading takes no lock: the log is opened first, so a compaction after that leaves a summary of the
same or a later generation, and the generations say which of the log's bytes it holds. A ledger
object keeps what it read and, while the summary and the log are the ones it read, folds only the
lines appended since (a server reads it on every request that mixes hotness in).

An older ovtui kept only uses, in ``.ovtui/hotness.jsonl`` and ``hotness.json``. Until the ledger
has taken them in, readers count them too; the first append or compaction folds them into the
summary, marks it migrated, and only then removes them (a crash between leaves a migrated summary:
the files are removed next time, never counted twice). An older ovtui still writing those files
while a newer one runs on the same workspace is not supported.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from filelock import FileLock, Timeout

from ovtui.core.bounded_json import parse_json
from ovtui.core.bounds import LEDGER_COMPACT_BYTES, MAX_LEDGER_LOG_BYTES, MAX_LEDGER_SUMMARY_BYTES
from ovtui.core.errors import LockTimeoutError, OvtuiError, UnsafePathError
from ovtui.memory.ledger_state import Fed, LedgerState, Record, Usage, encode
from ovtui.storage import fsio
from ovtui.storage.faults import os_error_line
from ovtui.storage.paths import (
    LEDGER_LOCK_FILE,
    LEDGER_LOG_FILE,
    LEDGER_SUMMARY_FILE,
    LEGACY_HOTNESS_LOCK_FILE,
    LEGACY_HOTNESS_LOG_FILE,
    LEGACY_HOTNESS_SUMMARY_FILE,
    WorkspacePaths,
)

_LOCK_POLL_S = 0.001  # appends hold the lock for one write: wait in small steps
_LOCK_TIMEOUT_S = 30.0
_MOVE_ASIDE = "move it aside to count uses afresh"
_MAX_LINE_BYTES = 1024 * 1024  # a record is well under it; a longer line is garbage, skipped in pieces

log = logging.getLogger(__name__)


def _header(generation: int) -> bytes:
    return (json.dumps({"log": generation}) + "\n").encode()


def _generation_of(first_line: bytes) -> int:
    """The generation a log's first line names (0 for a log from before logs were numbered)."""
    try:
        entry = parse_json(first_line, source="the log's first line")
        return int(entry["log"]) if isinstance(entry, dict) and "log" in entry else 0
    except (ValueError, TypeError):
        return 0


def _complete_lines(handle: BinaryIO, start: int) -> Iterator[tuple[bytes, int]]:
    """Each whole line from ``start`` with the byte after it. A last line without its newline is
    still being written (or was cut by a crash): it is not yielded, and reading stops before it. A
    line longer than any record is skipped."""
    handle.seek(start)
    end = start
    skipping = False
    while chunk := handle.readline(_MAX_LINE_BYTES):
        if not chunk.endswith(b"\n"):
            if len(chunk) < _MAX_LINE_BYTES:
                return  # the tail: not a whole line yet
            skipping = True
            end += len(chunk)
            continue
        end += len(chunk)
        if skipping:
            skipping = False
            yield b"", end  # the end of an over-long line: nothing to fold, the bytes are read
            continue
        yield chunk, end


def _fold_lines(state: LedgerState, handle: BinaryIO, start: int) -> int:
    """Fold the whole lines from ``start``; returns the byte after the last one."""
    end = start
    for line, line_end in _complete_lines(handle, start):
        end = line_end
        if line:
            state.fold_line(line)
    return end


@dataclass(slots=True)
class _Seen:
    """What a ledger object read last: the state, and which summary and log it came from."""

    state: LedgerState
    summary: tuple[int, int, int] | None  # inode, size, mtime of the summary file read (None: none)
    log: tuple[int, int] | None  # device and inode of the log read (None: none)
    generation: int
    read_to: int


class UseLedger:
    def __init__(
        self,
        paths: WorkspacePaths,
        *,
        compact_at: int = LEDGER_COMPACT_BYTES,
        read_limit: int = MAX_LEDGER_LOG_BYTES,
    ) -> None:
        self.paths = paths
        self.path = paths.root / LEDGER_LOG_FILE
        self.summary_path = paths.root / LEDGER_SUMMARY_FILE
        self.lock_path = paths.root / LEDGER_LOCK_FILE
        self.legacy_paths = (paths.root / LEGACY_HOTNESS_LOG_FILE, paths.root / LEGACY_HOTNESS_SUMMARY_FILE)
        self.compact_at = compact_at
        self.read_limit = read_limit  # the largest log a read takes in (compaction streams any size)
        self._seen: _Seen | None = None
        self._reading = threading.Lock()  # one reader of this object's state at a time

    # --- writing ---------------------------------------------------------------------------------
    @contextmanager
    def _locked(self) -> Iterator[None]:
        # A lock object per use: flock excludes other descriptors, threads of this process included.
        fsio.make_dirs(self.paths.state, root=self.paths.root)
        lock = FileLock(fsio.contained(self.lock_path, root=self.paths.root), thread_local=False)
        try:
            lock.acquire(timeout=_LOCK_TIMEOUT_S, poll_interval=_LOCK_POLL_S)
        except Timeout:
            shown = self.paths.relative(self.lock_path)
            raise LockTimeoutError(f"{shown}: still held after {_LOCK_TIMEOUT_S:.0f} s") from None
        try:
            yield
        finally:
            lock.release()

    def record(self, records: Iterable[Record], *, at: float | None = None) -> None:
        """Append ``records`` (all stamped ``at``, default now) in one write."""
        lines = encode(records, time.time() if at is None else at)
        if not lines:
            return
        with self._locked():
            self._migrate()
            fd = fsio.open_in_place(self.path, os.O_RDWR | os.O_APPEND, root=self.paths.root)
            try:
                size = os.fstat(fd).st_size
                if size == 0:  # a new log: numbered after the last one folded
                    lines = _header(self._read_summary()[0].log + 1) + lines
                elif os.pread(fd, 1, size - 1) != b"\n":
                    lines = b"\n" + lines  # the last line was cut by a crash: it stays cut, alone
                # One write per call: a crash cuts at most this call's last line; a full disk none.
                fsio.write_all(fd, lines, path=self.path)
                fsio.crash_point("ledger_appended")
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if size >= self.compact_at:
                self._compact()

    def try_record(self, records: Iterable[Record]) -> None:
        """``record`` for an agent, a search or a commit: records that cannot be written (a bad
        summary, a lock held too long, a full or read-only disk) are logged, naming the file, and
        the work goes on."""
        try:
            self.record(records)
        except OvtuiError as exc:
            log.warning("memory use not recorded: %s", exc)
        except OSError as exc:
            log.warning("memory use not recorded: %s", os_error_line(exc, self.paths.relative))

    def compact(self) -> None:
        """Fold the log into the summary and start an empty log (``record`` does it past the size)."""
        with self._locked():
            self._migrate()
            self._compact()

    def _compact(self) -> None:
        state = self._read_summary()[0]
        # Streamed at any size: folding is what brings an oversized log back.
        handle, generation = self._open_log(limit=None)
        end = self._fold_log(state, handle, generation)
        if generation < state.log:  # an older log put back by hand: generations only go up
            generation, end = state.log, state.offset
        state.keep_memories(self._memory_exists)
        state.log, state.offset = generation, end
        self._write_summary(state)
        # Only now the log goes: a crash before this leaves the summary naming the folded bytes.
        fsio.atomic_write_bytes(self.path, _header(generation + 1), root=self.paths.root)

    def _write_summary(self, state: LedgerState) -> None:
        text = json.dumps(state.to_json(), ensure_ascii=False, separators=(",", ":"))
        fsio.atomic_write_text(self.summary_path, text, root=self.paths.root)

    def _migrate(self) -> None:
        """Take an older ovtui's hotness files in (under the lock), once."""
        present = [p for p in self.legacy_paths if os.path.lexists(p)]
        if not present:
            return
        state = self._read_summary()[0]
        if not state.migrated:
            self._fold_legacy(state, limit=None)
            state.migrated = True
            self._write_summary(state)
        for path in [*present, self.paths.root / LEGACY_HOTNESS_LOCK_FILE]:
            fsio.remove_file(path, root=self.paths.root)

    def _memory_exists(self, uri: str) -> bool:
        try:
            return self.paths.path_for(uri).is_file()
        except UnsafePathError:
            return True  # not a memory of this workspace's files: kept as it was recorded

    # --- reading files ----------------------------------------------------------------------------
    def _open(self, path: Path, limit: int | None, remedy: str) -> BinaryIO | None:
        """``path`` opened for reading (None: no such file); one over ``limit`` is named, not read."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise OvtuiError(f"{self.paths.relative(path)}: cannot be read ({exc.strerror})") from None
        handle = os.fdopen(fd, "rb")
        size = os.fstat(fd).st_size
        if limit is not None and size > limit:
            handle.close()
            raise OvtuiError(
                f"{self.paths.relative(path)} is {size} bytes, over the {limit} ovtui reads; {remedy}"
            )
        return handle

    def _open_log(self, limit: int | None) -> tuple[BinaryIO | None, int]:
        """The log opened (None: none yet) and its generation."""
        handle = self._open(self.path, limit, "it is folded into the summary at the next recorded use")
        if handle is None:
            return None, 0
        generation = _generation_of(handle.readline(_MAX_LINE_BYTES))
        handle.seek(0)
        return handle, generation

    @staticmethod
    def _fold_log(state: LedgerState, handle: BinaryIO | None, generation: int) -> int:
        """Fold the lines of the log ``state`` does not hold yet into it (closing the log); returns
        the byte the log was read to."""
        if handle is None:
            return 0
        with handle:
            if generation < state.log:
                return 0  # folded by a compaction since it was opened: the summary holds it all
            # The bytes the summary already holds (all of them: a crash before the log was replaced).
            return _fold_lines(state, handle, state.offset if generation == state.log else 0)

    def _read_summary(self) -> tuple[LedgerState, tuple[int, int, int] | None]:
        """The summary and which file it was read from (None: there is none yet)."""
        handle = self._open(self.summary_path, MAX_LEDGER_SUMMARY_BYTES, _MOVE_ASIDE)
        if handle is None:
            return LedgerState(), None
        with handle:
            info = os.fstat(handle.fileno())
            data = handle.read()
        try:
            state = LedgerState.from_json(parse_json(data, source="its JSON"))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise OvtuiError(
                f"{self.paths.relative(self.summary_path)} is not a use ledger summary ({exc}); {_MOVE_ASIDE}"
            ) from None
        return state, (info.st_ino, info.st_size, info.st_mtime_ns)

    def _summary_identity(self) -> tuple[int, int, int] | None:
        try:
            info = os.stat(self.summary_path, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return info.st_ino, info.st_size, info.st_mtime_ns

    def _fold_legacy(self, state: LedgerState, limit: int | None) -> None:
        """Fold the uses an older ovtui's hotness files hold (its summary, then its log's lines
        that summary does not hold) into ``state``."""
        log_path, summary_path = self.legacy_paths
        remedy = "it is taken into the use ledger at the next recorded use"
        handle = self._open(log_path, limit, remedy)
        try:
            folded, offset = -1, 0
            summary = self._open(summary_path, MAX_LEDGER_SUMMARY_BYTES, _MOVE_ASIDE)
            if summary is not None:
                with summary:
                    folded, offset = self._add_legacy_summary(state, summary.read(), summary_path)
            if handle is not None:
                generation = _generation_of(handle.readline(_MAX_LINE_BYTES))
                if generation >= folded:
                    _fold_lines(state, handle, offset if generation == folded else 0)
        finally:
            if handle is not None:
                handle.close()

    def _add_legacy_summary(self, state: LedgerState, data: bytes, path: Path) -> tuple[int, int]:
        try:
            raw = parse_json(data, source="its JSON")
            uses = [(str(uri), int(use[0]), float(use[1])) for uri, use in raw["uses"].items()]
            folded, offset = int(raw["log"]), int(raw["offset"])
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise OvtuiError(
                f"{self.paths.relative(path)} is not a hotness summary ({exc}); {_MOVE_ASIDE}"
            ) from None
        for uri, count, last in uses:
            state.add_uses(uri, count, last)
        return folded, offset

    # --- reading -----------------------------------------------------------------------------------
    @contextmanager
    def _state(self) -> Iterator[LedgerState]:
        """The ledger as it stands, folded from what this object read before when the summary and
        the log are still the ones it read. Held for the ``with`` block: read it there, never keep
        it (the next read folds into it)."""
        with self._reading:
            handle, generation = self._open_log(limit=self.read_limit)
            try:
                log_id = None
                if handle is not None:
                    info = os.fstat(handle.fileno())
                    log_id = (info.st_dev, info.st_ino)
                seen = self._seen
                if (
                    seen is not None
                    and seen.log == log_id
                    and seen.generation == generation
                    and seen.summary == self._summary_identity()
                ):
                    seen.read_to = self._fold_from(seen.state, handle, seen.read_to)
                else:
                    self._seen = None  # a read that fails below leaves nothing half folded behind
                    state, summary_id = self._read_summary()
                    if not state.migrated:
                        self._fold_legacy(state, self.read_limit)
                    read_to = self._fold_log(state, handle, generation)
                    handle = None  # closed by the fold
                    seen = self._seen = _Seen(state, summary_id, log_id, generation, read_to)
            finally:
                if handle is not None:
                    handle.close()
            yield seen.state

    @staticmethod
    def _fold_from(state: LedgerState, handle: BinaryIO | None, start: int) -> int:
        return start if handle is None else _fold_lines(state, handle, start)

    def usage(self) -> dict[str, Usage]:
        """Every memory's record, by URI; ``OvtuiError`` naming the file when it cannot be read."""
        with self._state() as state:
            return state.usage()

    def usage_of(self, uri: str) -> Usage | None:
        with self._state() as state:
            return state.usage_of(uri)

    def uses_of(self, uris: Iterable[str]) -> list[tuple[int, float] | None]:
        """Each URI's count of uses and last use (None: never used)."""
        with self._state() as state:
            return [state.count_and_last(uri) for uri in uris]

    def open_uses(self, consumer: str) -> list[str]:
        """The memories ``consumer`` was served since its last outcome (what that outcome closes)."""
        with self._state() as state:
            entry = state.consumers.get(consumer)
            return list(entry.open) if entry is not None else []

    def fed(self, uri: str) -> list[Fed]:
        """The newest results ``uri`` fed (its trajectories among them), newest first."""
        with self._state() as state:
            return state.fed(uri)
