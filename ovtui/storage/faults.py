"""File-system errors: each one named by its path, in one line; and a seam that injects them.

Every write, rename, removal, lock and read of ovtui goes through ``fsio``, ``locks`` or
``reading``, and each of them calls ``fault_point(operation, path)`` first and names the path on
an ``OSError`` that lacks one (``os.write`` says "No space left on device" but not where). So the
commands and the servers can say ``runs/x/report.json: No space left on device`` in one line
(``os_error_line``) for any failure of the disk, and the tests can make any operation fail.

``OVTUI_FAULT=ERRNO:OPERATIONS:GLOB[:FROM]`` in the environment (or ``set_fault`` in-process)
makes the named operations raise ``OSError(ERRNO)`` for every path matching the glob, from the
``FROM``-th match on (default 1: at once; a disk that fills midway stays full):
``OVTUI_FAULT=ENOSPC:write:*/memories/*`` or ``OVTUI_FAULT=EROFS:writes:/srv/ws/*``. The operations
are ``OPERATIONS``, comma-separated; ``writes`` is all of them but ``read``, ``*`` all of them.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ovtui.core.errors import OvtuiError

FAULT_ENV = "OVTUI_FAULT"
TEMP_SUFFIX = ".tmp"  # a temp file's name is ".<target>.<pid>-<random>.tmp" (fsio)
OPERATIONS = ("mkdir", "create", "open", "write", "fsync", "rename", "remove", "lock", "read")

# What a person can do about the common causes, after the system's own words.
_REMEDIES = {
    errno.ENOSPC: "free some space and run it again",
    errno.EDQUOT: "free some space and run it again",
    errno.EROFS: "a read-only file system: check, history and review list/show still work on one",
    errno.EACCES: "ovtui may not write there: check the owner and the permissions",
    errno.EPERM: "ovtui may not write there: check the owner and the permissions",
}


WRITES = tuple(op for op in OPERATIONS if op != "read")
_GROUPS = {"*": OPERATIONS, "writes": WRITES}


@dataclass(frozen=True)
class Fault:
    code: int
    operations: frozenset[str]
    pattern: str  # a glob over the absolute path
    start: int = 1

    @classmethod
    def parse(cls, spec: str) -> Fault:
        parts = spec.split(":")
        if len(parts) not in (3, 4):
            raise OvtuiError(f"{FAULT_ENV}={spec!r}: expected ERRNO:OPERATIONS:GLOB[:FROM]")
        name, listed, pattern = parts[:3]
        code = getattr(errno, name, None)
        if not name.startswith("E") or not isinstance(code, int):
            raise OvtuiError(f"{FAULT_ENV}={spec!r}: {name!r} is not an errno name (ENOSPC, EACCES, …)")
        operations: set[str] = set()
        for operation in listed.split(","):
            if operation not in OPERATIONS and operation not in _GROUPS:
                raise OvtuiError(
                    f"{FAULT_ENV}={spec!r}: {operation!r} is not an operation "
                    f"({', '.join(OPERATIONS)}, writes or *)"
                )
            operations.update(_GROUPS.get(operation, (operation,)))
        start = parts[3] if len(parts) == 4 else "1"
        if not start.isdigit() or int(start) < 1:
            raise OvtuiError(f"{FAULT_ENV}={spec!r}: FROM is a whole number of at least 1")
        return cls(code, frozenset(operations), pattern, int(start))

    def matches(self, operation: str, path: str) -> bool:
        return operation in self.operations and fnmatch.fnmatchcase(path, self.pattern)


_fault_spec = os.environ.get(FAULT_ENV) or None
_fault: Fault | None = None
_matched = 0


def set_fault(fault: Fault | None) -> None:
    """Test hook: inject ``fault`` in this process from now on (None: no more faults)."""
    global _fault, _fault_spec, _matched
    _fault, _fault_spec, _matched = fault, None, 0


def fault_point(operation: str, path: Path | str) -> None:
    """Raise the injected fault if it names ``operation`` on ``path``; otherwise nothing."""
    global _fault, _fault_spec, _matched
    if _fault_spec is not None:  # parsed on first use: a bad value is one line, not an import error
        spec, _fault_spec = _fault_spec, None
        _fault = Fault.parse(spec)
    if _fault is None:
        return
    full = os.path.abspath(os.fspath(path))
    if not _fault.matches(operation, full):
        return
    _matched += 1
    if _matched >= _fault.start:
        raise OSError(_fault.code, os.strerror(_fault.code), full)


@contextlib.contextmanager
def naming(path: Path | str) -> Iterator[None]:
    """An ``OSError`` raised inside names ``path`` when it names no path (or only a temp file's)."""
    try:
        yield
    except OSError as exc:
        shown = os.fspath(path)
        named = None if exc.filename is None else os.path.basename(os.fsdecode(exc.filename))
        if named is None or (named.startswith(".") and named.endswith(TEMP_SUFFIX)):
            exc.filename = shown
        raise


def os_error_line(exc: OSError, show: Callable[[str], str] = str) -> str:
    """``path: cause (what to do)`` for an ``OSError``, in one line; ``show`` turns the path into
    the form the reader knows (relative to where they stand, or to the workspace)."""
    cause = exc.strerror or str(exc) or type(exc).__name__
    remedy = _REMEDIES.get(exc.errno or 0)
    text = f"{cause} ({remedy})" if remedy else cause
    if exc.filename is None:
        return text
    return f"{show(os.fsdecode(exc.filename))}: {text}"
