"""Bounded readers: a file, a JSONL file a line at a time, a JSON file as a value or as a model,
never read past its size limit nor parsed past its nesting limit.

The limits themselves are ``ovtui.core.bounds`` (sizes) and ``ovtui.core.bounded_json`` (depth);
a file over a limit is a named problem, never a memory spike or a ``RecursionError``. Every read
passes the ``read`` fault point (``storage.faults``) and an ``OSError`` names the file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from pydantic import BaseModel

from ovtui.core.bounded_json import parse_json
from ovtui.core.bounds import MAX_DATASET_LINE_BYTES
from ovtui.core.errors import OvtuiError
from ovtui.storage.faults import fault_point, naming

ModelT = TypeVar("ModelT", bound=BaseModel)


def open_for_reading(path: Path | str) -> BinaryIO:
    """``path`` opened to read its bytes (through the ``read`` fault point; errors name it)."""
    with naming(path):
        fault_point("read", path)
        return open(path, "rb")  # the caller closes it


def read_bounded(path: Path | str, limit: int, *, what: str, shown: str | None = None) -> bytes:
    """The bytes of ``path``, refusing (by name) a file larger than ``limit`` without reading it whole."""
    with open_for_reading(path) as handle, naming(path):
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise OvtuiError(
            f"{shown or path}: {what} is {max(size, len(data))} bytes, larger than the {limit} byte limit"
        )
    return data


def read_json(path: Path | str, limit: int, *, what: str, shown: str | None = None) -> Any:
    """The JSON value in ``path``: over ``limit`` bytes, not JSON or nested too deeply is an
    ``OvtuiError`` naming ``shown`` (a ``JsonError``, also a ``ValueError``, for the last two)."""
    return parse_json(read_bounded(path, limit, what=what, shown=shown), source=shown or str(path))


def read_model(
    path: Path | str, model: type[ModelT], limit: int, *, what: str, shown: str | None = None
) -> ModelT:
    """``model`` validated from the JSON in ``path`` (pydantic's parser, nesting bounded as in
    ``parse_json``); a file over ``limit`` bytes is an ``OvtuiError``, a wrong one pydantic's
    ``ValidationError`` as from ``model_validate_json``."""
    return model.model_validate_json(read_bounded(path, limit, what=what, shown=shown))


def jsonl_lines(path: Path | str, limit: int = MAX_DATASET_LINE_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) for each non-blank line of a JSONL file, read one line at a time;
    ``None`` for a line longer than ``limit`` bytes (the caller reports it, by line)."""
    with open_for_reading(path) as handle, naming(path):
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
