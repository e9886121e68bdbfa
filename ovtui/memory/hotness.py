"""Hotness: how often and how recently a memory was used, as a score in [0, 1].

A use is a memory retrieved into a prompt or a rollout. Uses are appended to
``.ovtui/hotness.jsonl`` (one line per use: uri and time; appends never rewrite a memory file, so
using a memory makes no History record). The score follows the seed's shape — frequency squashed
by ``sigmoid(log1p(count))``, times an exponential decay with the age of the last use and a
configurable half-life — and is zero for a memory never used. Retrieval mixes it in with a
weight: ``(1 - w) · relevance + w · hotness`` over relevances scaled to [0, 1]; ``w = 0`` leaves
retrieval as it was.

The log stays small: once an append takes it past ``HOTNESS_COMPACT_BYTES`` it is folded into
``.ovtui/hotness.json`` (``{uri: [count, last_used]}``) and replaced by an empty one, so the uses
are the summary's plus the log's lines. Appends and compactions share ``.ovtui/hotness.lock``, so
no use lands between reading the log and replacing it. Each log begins with a line giving its
generation; the summary records which generation it folded and up to which byte. Compaction writes
the summary first and replaces the log second, so a crash between the two leaves a summary whose
folded bytes the reader skips in the log it names — no use lost or counted twice. Uses of a
memory file that no longer exists are dropped when the log is folded.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from filelock import FileLock, Timeout

from ovtui.core.bounds import HOTNESS_COMPACT_BYTES, MAX_HOTNESS_LOG_BYTES, MAX_HOTNESS_SUMMARY_BYTES
from ovtui.core.errors import LockTimeoutError, OvtuiError, UnsafePathError
from ovtui.storage import fsio
from ovtui.storage.paths import (
    HOTNESS_LOCK_FILE,
    HOTNESS_LOG_FILE,
    HOTNESS_SUMMARY_FILE,
    WorkspacePaths,
)

DAY_S = 86_400.0
_LOCK_POLL_S = 0.001  # appends hold the lock for one write: wait in small steps
_LOCK_TIMEOUT_S = 30.0
_MOVE_ASIDE = "move it aside to count uses afresh"
_MAX_LINE_BYTES = 64 * 1024  # a use line is ~100 bytes; a longer one is garbage, read in pieces


log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Usage:
    count: int
    last_used: float  # epoch seconds


def hotness_score(usage: Usage | None, *, now: float, half_life_days: float) -> float:
    if usage is None or usage.count <= 0:
        return 0.0
    frequency = 1.0 / (1.0 + math.exp(-math.log1p(usage.count)))
    age_days = max(0.0, now - usage.last_used) / DAY_S
    return frequency * math.exp(-math.log(2) / half_life_days * age_days)


def blend(relevance: Sequence[float], hotness: Sequence[float], weight: float) -> list[float]:
    """Relevance (scaled by its maximum) and hotness mixed with ``weight`` in [0, 1]."""
    if weight <= 0:
        return list(relevance)
    top = max(relevance, default=0.0) or 1.0
    return [(1 - weight) * r / top + weight * h for r, h in zip(relevance, hotness, strict=True)]


@dataclass(slots=True)
class _Summary:
    """What compactions folded: the uses, and which log (by its generation) up to which byte."""

    uses: dict[str, list[float]] = field(default_factory=dict)  # uri -> [count, last_used]
    log: int = -1  # the generation of the log folded last (-1: none yet)
    offset: int = 0


def _header(generation: int) -> bytes:
    return (json.dumps({"log": generation}) + "\n").encode()


def _generation_of(first_line: bytes) -> int:
    """The generation a log's first line names (0 for a log from before logs were numbered)."""
    try:
        entry = json.loads(first_line)
        return int(entry["log"]) if isinstance(entry, dict) and "log" in entry else 0
    except (ValueError, TypeError):
        return 0


def _fold(uses: dict[str, list[float]], line: bytes) -> None:
    try:
        entry = json.loads(line)
        uri, at = str(entry["uri"]), float(entry["at"])
    except (ValueError, KeyError, TypeError):
        return  # the header, or a line cut by a crash: that one use is lost, nothing else
    before = uses.get(uri)
    if before is None:
        uses[uri] = [1, at]
    else:
        before[0] += 1
        before[1] = max(before[1], at)


@dataclass(frozen=True, slots=True)
class HotnessMix:
    """Hotness mixed into a ranking (``weight`` 0 leaves it lexical) and where uses are recorded."""

    log: HotnessLog
    weight: float = 0.0
    half_life_days: float = 7.0

    def mixed(self, uris: Sequence[str], relevance: Sequence[float]) -> list[float]:
        """``relevance`` of the memories at ``uris`` mixed with their hotness. Heat orders related
        memories; it never makes an unrelated one (relevance 0) related."""
        if self.weight <= 0:
            return list(relevance)
        heat = self.log.scores(uris, half_life_days=self.half_life_days)
        mixed = blend(relevance, heat, self.weight)
        return [m if r > 0 else 0.0 for r, m in zip(relevance, mixed, strict=True)]


class HotnessLog:
    def __init__(
        self,
        paths: WorkspacePaths,
        *,
        compact_at: int = HOTNESS_COMPACT_BYTES,
        read_limit: int = MAX_HOTNESS_LOG_BYTES,
    ) -> None:
        self.paths = paths
        self.path = paths.root / HOTNESS_LOG_FILE
        self.summary_path = paths.root / HOTNESS_SUMMARY_FILE
        self.lock_path = paths.root / HOTNESS_LOCK_FILE
        self.compact_at = compact_at
        self.read_limit = read_limit  # the largest log usage() reads (compaction streams any size)

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

    def record_use(self, uris: Iterable[str]) -> None:
        """``record`` for an agent or an extraction: a use that cannot be written (a bad summary, a
        lock held too long) is logged, naming the file, and the work that used the memory goes on."""
        try:
            self.record(uris)
        except OvtuiError as exc:
            log.warning("hotness use not recorded: %s", exc)

    def record(self, uris: Iterable[str], *, at: float | None = None) -> None:
        stamp = time.time() if at is None else at
        lines = "".join(json.dumps({"uri": uri, "at": stamp}) + "\n" for uri in uris).encode()
        if not lines:
            return
        with self._locked():
            fd = fsio.open_in_place(self.path, os.O_WRONLY | os.O_APPEND, root=self.paths.root)
            try:
                if os.fstat(fd).st_size == 0:  # a new log: numbered after the last one folded
                    lines = _header(self._read_summary().log + 1) + lines
                os.write(fd, lines)  # one write per call: a crash cuts at most this call's last line
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if size >= self.compact_at:
                self._compact()

    def compact(self) -> None:
        """Fold the log into the summary and start an empty log (``record`` does it past the size)."""
        with self._locked():
            self._compact()

    def _compact(self) -> None:
        summary = self._read_summary()
        # Streamed at any size: folding is what brings an oversized log (an old workspace's) back.
        handle, generation = self._open_log(limit=None)
        end = self._fold_log(summary, handle, generation)
        if generation < summary.log:  # an older log put back by hand: generations only go up
            generation, end = summary.log, summary.offset
        kept = {uri: use for uri, use in summary.uses.items() if self._memory_exists(uri)}
        folded = {"log": generation, "offset": end, "uses": kept}
        fsio.atomic_write_text(self.summary_path, json.dumps(folded), root=self.paths.root)
        # Only now the log goes: a crash before this leaves the summary naming the folded bytes.
        fsio.atomic_write_bytes(self.path, _header(generation + 1), root=self.paths.root)

    def _memory_exists(self, uri: str) -> bool:
        try:
            return self.paths.path_for(uri).is_file()
        except UnsafePathError:
            return True  # not a memory of this workspace's files: kept as it was recorded

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
    def _fold_log(summary: _Summary, handle: BinaryIO | None, generation: int) -> int:
        """Fold the uses of the log the summary does not hold into it, a line at a time; returns the
        byte the log was read to."""
        if handle is None:
            return 0
        with handle:
            if generation < summary.log:
                return 0  # folded by a compaction since it was opened: the summary holds it all
            # The bytes the summary already holds (all of them: a crash before the log was replaced).
            start = summary.offset if generation == summary.log else 0
            handle.seek(start)
            end = start
            while line := handle.readline(_MAX_LINE_BYTES):
                end += len(line)
                _fold(summary.uses, line)
        return end

    def _read_summary(self) -> _Summary:
        handle = self._open(self.summary_path, MAX_HOTNESS_SUMMARY_BYTES, _MOVE_ASIDE)
        if handle is None:
            return _Summary()
        with handle:
            data = handle.read()
        try:
            raw = json.loads(data)
            uses = {str(uri): [int(use[0]), float(use[1])] for uri, use in raw["uses"].items()}
            return _Summary(uses, int(raw["log"]), int(raw["offset"]))
        except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
            raise OvtuiError(
                f"{self.paths.relative(self.summary_path)} is not a hotness summary ({exc}); {_MOVE_ASIDE}"
            ) from None

    def usage(self) -> dict[str, Usage]:
        # No lock: the log is opened first, so a compaction after that leaves a summary of the same
        # or a later generation, and the generations say which of the log's bytes it holds.
        handle, generation = self._open_log(limit=self.read_limit)
        try:
            summary = self._read_summary()
        except BaseException:
            if handle is not None:
                handle.close()
            raise
        self._fold_log(summary, handle, generation)
        return {uri: Usage(int(count), last) for uri, (count, last) in summary.uses.items()}

    def scores(self, uris: Sequence[str], *, half_life_days: float, now: float | None = None) -> list[float]:
        """Hotness of each URI. A log or summary ovtui cannot read scores nothing hot: hotness only
        orders what is relevant and must not stop retrieval; the problem is logged, naming the file."""
        try:
            usage = self.usage()
        except OvtuiError as exc:
            log.warning("hotness left out of retrieval: %s", exc)
            usage = {}
        moment = time.time() if now is None else now
        return [hotness_score(usage.get(u), now=moment, half_life_days=half_life_days) for u in uris]
