"""The workspace lock: a real OS file lock, so it serialises processes as well as tasks.

It sits on ``.ovtui/lock``. Whoever holds it writes who they are into ``.ovtui/lock.holder`` so a
waiter that times out can name the holder. A plain threading lock queues the threads and tasks of
one process in front of the OS lock (flock, through filelock, is per open file, not per thread).
The lock is not re-entrant: code that runs under it takes it once, at the top.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from ovtui.core.bounded_json import parse_json
from ovtui.core.errors import LockTimeoutError, UnsafePathError
from ovtui.storage import fsio
from ovtui.storage.faults import fault_point, naming
from ovtui.storage.paths import LOCK_FILE, LOCK_HOLDER_FILE

DEFAULT_TIMEOUT_S = 30.0
_HOST = socket.gethostname()
_HOLDER_BYTES = 256
# A contended lock is retried this often: filelock's default (50 ms) would cap a busy workspace at
# about 20 applies a second per waiting process.
_POLL_S = 0.001


class WorkspaceLock:
    def __init__(
        self, state_dir: Path, *, timeout: float = DEFAULT_TIMEOUT_S, root: Path | None = None
    ) -> None:
        # Both files must stay inside the workspace (by default the folder that holds ``.ovtui``).
        self.root = root if root is not None else state_dir.parent
        self.path = state_dir / LOCK_FILE.rpartition("/")[2]
        self.holder_path = state_dir / LOCK_HOLDER_FILE.rpartition("/")[2]
        self.timeout = timeout
        # thread_local=False: an async holder may take it in one worker thread and free it in another.
        self._file_lock = FileLock(str(self.path), thread_local=False, is_singleton=False)
        self._in_process = threading.Lock()
        self._dir_ready = False

    def describe_holder(self) -> str:
        try:
            fd = os.open(self.holder_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as handle:
                info = parse_json(handle.read(_HOLDER_BYTES), source=str(self.holder_path))
            return f"pid {info['pid']} on {info['host']} ({info['purpose']}, since {info['since']})"
        except (OSError, ValueError, KeyError, TypeError):
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
                fsio.make_dirs(self.path.parent, root=self.root)
                self._dir_ready = True
            self._refuse_link()
            remaining = max(0.0, wait - (time.monotonic() - started))
            # A disk that refuses the lock file (read-only, no permission) raises its OSError,
            # naming the lock file.
            with naming(self.path):
                fault_point("lock", self.path)
                self._file_lock.acquire(timeout=remaining, poll_interval=_POLL_S)
            won = True
        except Timeout:
            won = False
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

    def _refuse_link(self) -> None:
        """The lock file is opened by filelock; a link there is refused by name before it tries."""
        if os.path.islink(self.path):
            raise UnsafePathError(
                f"{self.path} is a symbolic link (to {os.path.realpath(self.path)}); "
                "the workspace lock must be a plain file: remove the link"
            )

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
        # A holder that cannot be written (a full disk) leaves waiters saying "an unknown process":
        # the lock itself still holds. A link where the holder should be is refused.
        try:
            fd = fsio.open_in_place(self.holder_path, os.O_WRONLY, root=self.root)
        except OSError:
            return
        except BaseException:
            self.release()
            raise
        try:
            with contextlib.suppress(OSError):
                fault_point("write", self.holder_path)
                os.pwrite(fd, data, 0)
                if os.fstat(fd).st_size > len(data):
                    os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
