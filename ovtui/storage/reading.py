"""Bounded readers: a file, or a JSONL file a line at a time, never read past its size limit.

The limits themselves are ``ovtui.core.bounds``; a file over its limit is a named problem, never a
memory spike.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from ovtui.core.bounds import MAX_DATASET_LINE_BYTES
from ovtui.core.errors import OvtuiError


def read_bounded(path: Path, limit: int, *, what: str, shown: str | None = None) -> bytes:
    """The bytes of ``path``, refusing (by name) a file larger than ``limit`` without reading it whole."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise OvtuiError(
            f"{shown or path}: {what} is {max(size, len(data))} bytes, larger than the {limit} byte limit"
        )
    return data


def jsonl_lines(path: Path, limit: int = MAX_DATASET_LINE_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) for each non-blank line of a JSONL file, read one line at a time;
    ``None`` for a line longer than ``limit`` bytes (the caller reports it, by line)."""
    with open(path, "rb") as handle:
        number = 0
        while True:
            line = handle.readline(limit + 1)
            if not line:
                return
            number += 1
            if len(line) > limit and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):  # skip the rest of the long line
                    line = handle.readline(limit + 1)
                yield number, None
            elif line.strip():
                yield number, line
