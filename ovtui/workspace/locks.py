"""The workspace lock: a real OS file lock, so it serialises processes as well as tasks.

It sits on ``.ovtui/lock``. Whoever holds it writes who they are into ``.ovtui/lock.holder`` so a
waiter that times out can name the holder. A plain threading lock queues the threads and tasks of
one process in front of the OS lock (flock is per open file, not per thread). The lock is not
re-entrant: code that runs under it takes it once, at the top.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from ovtui.errors import LockTimeoutError

try:
    import fcntl
except ImportError:  # Windows: filelock's LockFileEx
    fcntl = None  # type: ignore[assignment]

DEFAULT_TIMEOUT_S = 30.0
_HOST = socket.gethostname()
_HOLDER_BYTES = 256
# Waiting for a busy lock polls with backoff (flock has no timeout); short first waits keep a
# contended lock busy, the cap keeps idle waiters cheap.
_POLL_FIRST_S = 0.0005
_POLL_MAX_S = 0.02


class _Flock:
    """flock(2) on a descriptor opened per acquisition: a descriptor kept open would be shared
    with forked children, and with it the lock. About 20 µs uncontended (filelock: ~300 µs)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, timeout: float) -> bool:
        assert fcntl is not None
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        deadline = time.monotonic() + timeout
        delay = _POLL_FIRST_S
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    self._fd = fd
                    return True
                except BlockingIOError:
                    pass
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    os.close(fd)
                    return False
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, _POLL_MAX_S)
        except BaseException:
            if self._fd != fd:
                os.close(fd)
            raise

    def release(self) -> None:
        assert fcntl is not None
        fd, self._fd = self._fd, None
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


class _FileLockAdapter:
    def __init__(self, path: Path) -> None:
        # thread_local=False: an async holder may take it in one worker thread and free it in another.
        self._lock = FileLock(str(path), thread_local=False, is_singleton=False)

    def acquire(self, timeout: float) -> bool:
        try:
            self._lock.acquire(timeout=timeout, poll_interval=_POLL_MAX_S)
        except Timeout:
            return False
        return True

    def release(self) -> None:
        self._lock.release()


class WorkspaceLock:
    def __init__(self, state_dir: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.path = state_dir / "lock"
        self.holder_path = state_dir / "lock.holder"
        self.timeout = timeout
        self._file_lock = _Flock(self.path) if fcntl is not None else _FileLockAdapter(self.path)
        self._in_process = threading.Lock()
        self._dir_ready = False

    def describe_holder(self) -> str:
        try:
            info = json.loads(self.holder_path.read_text(encoding="utf-8"))
            return f"pid {info['pid']} on {info['host']} ({info['purpose']}, since {info['since']})"
        except (OSError, ValueError, KeyError):
            return "an unknown process"

    def acquire(self, purpose: str = "apply", timeout: float | None = None) -> None:
        wait = self.timeout if timeout is None else timeout
        started = time.monotonic()
        if not self._in_process.acquire(timeout=wait):
            raise LockTimeoutError(
                f"could not take the workspace lock {self.path} within {wait:.1f}s: "
                f"busy in this process, held by {self.describe_holder()}"
            )
        try:
            if not self._dir_ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._dir_ready = True
            won = self._file_lock.acquire(max(0.0, wait - (time.monotonic() - started)))
        except BaseException:
            self._in_process.release()
            raise
        if not won:
            self._in_process.release()
            raise LockTimeoutError(
                f"could not take the workspace lock {self.path} within {wait:.1f}s: "
                f"held by {self.describe_holder()}"
            )
        self._write_holder(purpose)

    def release(self) -> None:
        self._file_lock.release()
        self._in_process.release()

    @contextmanager
    def hold(self, purpose: str = "apply", timeout: float | None = None) -> Iterator[None]:
        self.acquire(purpose, timeout)
        try:
            yield
        finally:
            self.release()

    @asynccontextmanager
    async def held(self, purpose: str = "apply", timeout: float | None = None) -> AsyncIterator[None]:
        """Async form: waits in a worker thread so the event loop (and the UI) never blocks."""
        pending = asyncio.ensure_future(asyncio.to_thread(self.acquire, purpose, timeout))
        try:
            await asyncio.shield(pending)
        except asyncio.CancelledError:
            # The thread may still win the lock after we stop waiting: give it straight back.
            pending.add_done_callback(self._release_if_won)
            raise
        try:
            yield
        finally:
            self.release()

    def _release_if_won(self, acquiring: asyncio.Future[None]) -> None:
        if not acquiring.cancelled() and acquiring.exception() is None:
            self.release()

    def _write_holder(self, purpose: str) -> None:
        info = {
            "pid": os.getpid(),
            "host": _HOST,
            "purpose": purpose[:80],
            "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        # Informational only (the flock is the lock), so a plain write is enough. Padded to a fixed
        # size and written in place: no truncation, which costs a journal commit on every apply.
        data = json.dumps(info).encode("utf-8").ljust(_HOLDER_BYTES)
        fd = os.open(self.holder_path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, data, 0)
            if os.fstat(fd).st_size > len(data):
                os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
