"""Durable file writes: temp file in the same folder, fsync, rename, fsync the folder.

A reader sees either the old file or the new one, never a truncated mix, even across a crash.

Crash tests need to stop a real process between two low-level steps. ``crash_point()`` counts
steps and SIGKILLs the process at the N-th one when ``OVTUI_CRASH_AFTER_STEPS=N`` is set in the
environment (or ``set_crash_after(N)`` was called in a forked child); otherwise it is a no-op.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
from pathlib import Path

TEMP_SUFFIX = ".tmp"
CRASH_ENV = "OVTUI_CRASH_AFTER_STEPS"

_crash_after: int | None = int(os.environ[CRASH_ENV]) if os.environ.get(CRASH_ENV, "").isdigit() else None
_steps = 0


def set_crash_after(steps: int | None) -> None:
    """Test hook: SIGKILL this process after ``steps`` more low-level write steps (None: never)."""
    global _crash_after, _steps
    _crash_after, _steps = steps, 0


def crash_point() -> None:
    global _steps
    if _crash_after is None:
        return
    _steps += 1
    if _steps >= _crash_after:
        os.kill(os.getpid(), signal.SIGKILL)


def steps_taken() -> int:
    return _steps


def fsync_dir(folder: Path | str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    crash_point()


def temp_prefix(name: str) -> str:
    """Temp files of ``name`` are ``.<name>.<random>.tmp`` next to it (recovery relies on this)."""
    return f".{name}."


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def _create_temp(folder: str, name: str) -> tuple[int, str]:
    """A new temp file next to ``name`` (folders created on demand: the common case pays no mkdir)."""
    tmp = os.path.join(folder, f"{temp_prefix(name)}{secrets.token_hex(6)}{TEMP_SUFFIX}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        return os.open(tmp, flags, 0o666), tmp
    except FileNotFoundError:
        os.makedirs(folder, exist_ok=True)
        return os.open(tmp, flags, 0o666), tmp


def atomic_write_bytes(path: Path | str, data: bytes, *, sync_dir: bool = True) -> None:
    folder, name = os.path.split(os.fspath(path))
    fd, tmp = _create_temp(folder, name)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            crash_point()
            os.fsync(fd)
        finally:
            os.close(fd)
        crash_point()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    crash_point()
    if sync_dir:
        fsync_dir(folder)


def atomic_write_text(path: Path | str, text: str, *, sync_dir: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), sync_dir=sync_dir)


def remove_file(path: Path | str, *, sync_dir: bool = True) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    crash_point()
    if sync_dir:
        fsync_dir(os.path.dirname(os.fspath(path)))


def remove_durably(path: Path) -> None:
    remove_file(path, sync_dir=True)
