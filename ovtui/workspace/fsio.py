"""Durable file writes: temp file in the same folder, fsync, rename, fsync the folder.

A reader sees either the old file or the new one, never a truncated mix, even across a crash.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, *, sync_dir: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str, *, sync_dir: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), sync_dir=sync_dir)


def remove_durably(path: Path) -> None:
    path.unlink(missing_ok=True)
    fsync_dir(path.parent)
