"""Durable file writes: temp file in the same folder, fsync, rename, fsync the folder.

A reader sees either the old file or the new one, never a truncated mix, even across a crash.

Every function here that writes, creates, renames, truncates or deletes takes the workspace
``root`` and refuses (``UnsafePathError``) a path that would resolve outside it: a folder on the
way or the file itself may be a symbolic link only if it leads inside. This is the one place the
rule is enforced, below every writer. Files written in place (appends, the lock holder) are opened
with ``O_NOFOLLOW`` so a link that appears after the check is not followed either.

Crash tests need to stop a real process between two low-level steps. ``crash_point()`` counts
steps and SIGKILLs the process at the N-th one when ``OVTUI_CRASH_AFTER_STEPS=N`` is set in the
environment (or ``set_crash_after(N)`` was called in a forked child); otherwise it is a no-op.
``OVTUI_CRASH_AT=PATTERN`` kills it at the first named point matching the glob pattern instead
(``temp:report.json``: while that file's temp file is written; ``intake_recorded``: …).

Every step also passes a fault point (``storage.faults``: ``OVTUI_FAULT`` makes a chosen one fail
with a chosen errno), and an ``OSError`` leaving a function here names the file it was about: the
target, never the temp file beside it.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
import re
import secrets
import signal
import stat
from pathlib import Path

from ovtui.core.errors import UnsafePathError
from ovtui.storage.faults import TEMP_SUFFIX, fault_point, naming

_TEMP_NAME = re.compile(r"^\..+\.(\d+)-[0-9a-f]{12}\.tmp$")
CRASH_ENV = "OVTUI_CRASH_AFTER_STEPS"
CRASH_AT_ENV = "OVTUI_CRASH_AT"

_crash_after: int | None = int(os.environ[CRASH_ENV]) if os.environ.get(CRASH_ENV, "").isdigit() else None
_steps = 0
_crash_at = os.environ.get(CRASH_AT_ENV) or None


def set_crash_after(steps: int | None) -> None:
    """Test hook: SIGKILL this process after ``steps`` more low-level write steps (None: never)."""
    global _crash_after, _steps
    _crash_after, _steps = steps, 0


def crash_point(label: str | None = None) -> None:
    global _steps
    if _crash_at is not None and label is not None and fnmatch.fnmatchcase(label, _crash_at):
        os.kill(os.getpid(), signal.SIGKILL)
    if _crash_after is None:
        return
    _steps += 1
    if _steps >= _crash_after:
        os.kill(os.getpid(), signal.SIGKILL)


def steps_taken() -> int:
    return _steps


_real_roots: dict[str, str] = {}
# Folders found inside a root, by what ``os.stat`` reached (device, inode, mode): a folder swapped
# for a link somewhere else reaches another identity and is checked again. Saves a full path
# resolution per write on the apply path.
_checked_folders: dict[tuple[str, str], tuple[int, int, int]] = {}


def _real_root(root: Path | str) -> str:
    key = os.fspath(root)
    real = _real_roots.get(key)
    if real is None:
        real = _real_roots[key] = os.path.realpath(key)
    return real


def _inside(real_root: str, real: str) -> bool:
    return real == real_root or real.startswith(real_root + os.sep)


def _shown(real_root: str, path: str) -> str:
    rel = os.path.relpath(path, real_root)
    return path if rel.startswith("..") else rel


def _check_folder(real_root: str, folder: str, target: str) -> None:
    try:
        info = os.stat(folder)
    except FileNotFoundError:
        parent = os.path.dirname(folder)
        if parent == folder:
            raise UnsafePathError(f"{target}: no existing folder on the way") from None
        _check_folder(real_root, parent, target)  # it will be created below a checked folder
        return
    except NotADirectoryError:
        raise UnsafePathError(f"{_shown(real_root, target)}: a folder on the way is a file") from None
    identity = (info.st_dev, info.st_ino, info.st_mode)
    key = (real_root, folder)
    if _checked_folders.get(key) == identity:
        return
    if not _inside(real_root, os.path.realpath(folder)):
        raise UnsafePathError(
            f"{_shown(real_root, target)} leads outside the workspace (a folder on the way is a "
            f"symbolic link to {os.path.realpath(folder)})"
        )
    _checked_folders[key] = identity


def contained(path: Path | str, *, root: Path | str) -> str:
    """``path`` (absolute, or relative to ``root``) as a string, when writing there stays inside
    ``root``; else ``UnsafePathError`` naming it."""
    real_root = _real_root(root)
    full = os.path.abspath(os.path.join(os.fspath(root), os.fspath(path)))
    _check_folder(real_root, os.path.dirname(full), full)
    try:
        mode = os.lstat(full).st_mode
    except FileNotFoundError:
        return full
    if stat.S_ISLNK(mode) and not _inside(real_root, os.path.realpath(full)):
        raise UnsafePathError(
            f"{_shown(real_root, full)} is a symbolic link to {os.path.realpath(full)}, outside the workspace"
        )
    return full


def make_dirs(folder: Path | str, *, root: Path | str) -> None:
    full = contained(folder, root=root)
    if os.path.isdir(full):
        return  # there already: nothing to write, so a full or read-only disk is no reason to fail
    with naming(full):
        fault_point("mkdir", full)
        os.makedirs(full, exist_ok=True)


def make_root(root: Path | str) -> None:
    """Create a workspace's own folder (and the folders on the way): the one folder that no
    workspace contains, so the containment rule does not apply."""
    full = os.path.abspath(os.fspath(root))
    if os.path.isdir(full):
        return
    with naming(full):
        fault_point("mkdir", full)
        os.makedirs(full, exist_ok=True)


def open_in_place(path: Path | str, flags: int, *, root: Path | str, mode: int = 0o644) -> int:
    """A descriptor for writing ``path`` in place (``flags`` e.g. ``O_APPEND``), never through a
    final symbolic link; its folder is created on demand."""
    full = contained(path, root=root)
    flags |= os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW
    with naming(full):
        fault_point("open", full)
        try:
            return _open_named(full, flags, mode, real_root=_real_root(root))
        except FileNotFoundError:
            os.makedirs(os.path.dirname(full), exist_ok=True)
            return _open_named(full, flags, mode, real_root=_real_root(root))


def write_all(fd: int, data: bytes, *, path: Path | str) -> None:
    """Write all of ``data`` at the end of the file open as ``fd`` (opened with ``O_APPEND``), or
    nothing: a short or failed write is cut off again, so a full disk leaves no torn line behind.
    An ``OSError`` names ``path``."""
    with naming(path):
        start = os.fstat(fd).st_size
        try:
            fault_point("write", path)
            view = memoryview(data)
            view = view[os.write(fd, view) :]  # one write: concurrent appenders never interleave
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, start)
            raise


def _open_named(full: str, flags: int, mode: int, *, real_root: str) -> int:
    try:
        return os.open(full, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePathError(
                f"{_shown(real_root, full)} is a symbolic link; ovtui writes it in place"
            ) from None
        raise


def move_file(source: Path | str, target: Path | str, *, root: Path | str, durable: bool = False) -> None:
    """Move ``source`` to ``target`` (both inside ``root``) without replacing an existing file.

    ``durable``: the new name is on disk before the old one goes, and the removal after it, so a
    crash leaves the file under one name or both, never under none."""
    src = contained(source, root=root)
    dst = contained(target, root=root)
    with naming(dst):
        fault_point("rename", dst)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        try:
            os.link(src, dst, follow_symlinks=False)  # fails if ``dst`` exists: nothing is overwritten
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            if os.path.lexists(dst):
                raise FileExistsError(errno.EEXIST, "target exists", dst) from None
            os.rename(src, dst)
        else:
            if durable:
                fsync_dir(os.path.dirname(dst))
            os.unlink(src)
        if durable:
            fsync_dir(os.path.dirname(src))
            fsync_dir(os.path.dirname(dst))


def fsync_dir(folder: Path | str) -> None:
    with naming(folder):
        fault_point("fsync", folder)
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    crash_point()


def temp_prefix(name: str) -> str:
    """Temp files of ``name`` are ``.<name>.<pid>-<random>.tmp`` (recovery relies on this): the
    writer's process id tells recovery whether the writer is still alive."""
    return f".{name}."


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def temp_writer(name: str) -> int | None:
    """The process id in a temp file's name (None: an older temp name without one)."""
    match = _TEMP_NAME.match(name)
    return int(match.group(1)) if match else None


def writer_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _create_temp(folder: str, name: str) -> tuple[int, str]:
    """A new temp file next to ``name`` (folders created on demand: the common case pays no mkdir)."""
    fault_point("create", os.path.join(folder, name))
    tmp = os.path.join(folder, f"{temp_prefix(name)}{os.getpid()}-{secrets.token_hex(6)}{TEMP_SUFFIX}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    try:
        return os.open(tmp, flags, 0o666), tmp
    except FileNotFoundError:
        os.makedirs(folder, exist_ok=True)
        return os.open(tmp, flags, 0o666), tmp


def atomic_write_bytes(
    path: Path | str,
    data: bytes,
    *,
    root: Path | str,
    sync_dir: bool = True,
    temp_dir: Path | str | None = None,
) -> None:
    """``temp_dir``: make the temp file there instead of next to ``path`` (same file system), so a
    crash leaves it in a folder recovery sweeps rather than in one of thousands of run folders."""
    path = contained(path, root=root)
    with naming(path):
        _write_replacing(path, data, None if temp_dir is None else contained(temp_dir, root=root))
    crash_point()
    if sync_dir:
        fsync_dir(os.path.dirname(path))


def _write_replacing(path: str, data: bytes, temp_dir: str | None) -> None:
    folder, name = os.path.split(path)
    if temp_dir is not None:
        os.makedirs(folder, exist_ok=True)
    fd, tmp = _create_temp(temp_dir if temp_dir is not None else folder, name)
    try:
        try:
            fault_point("write", path)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            crash_point(f"temp:{name}")
            fault_point("fsync", path)
            os.fsync(fd)
        finally:
            os.close(fd)
        crash_point()
        fault_point("rename", path)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_text(
    path: Path | str,
    text: str,
    *,
    root: Path | str,
    sync_dir: bool = True,
    temp_dir: Path | str | None = None,
) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), root=root, sync_dir=sync_dir, temp_dir=temp_dir)


def remove_file(path: Path | str, *, root: Path | str, sync_dir: bool = True) -> None:
    path = contained(path, root=root)
    with naming(path), contextlib.suppress(FileNotFoundError):
        fault_point("remove", path)
        os.unlink(path)
    crash_point()
    if sync_dir:
        fsync_dir(os.path.dirname(os.fspath(path)))


def remove_durably(path: Path, *, root: Path | str) -> None:
    remove_file(path, root=root, sync_dir=True)
