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

DEFAULT_TIMEOUT_S = 30.0


class WorkspaceLock:
    def __init__(self, state_dir: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.path = state_dir / "lock"
        self.holder_path = state_dir / "lock.holder"
        self.timeout = timeout
        # thread_local=False: an async holder may take it in one worker thread and free it in another.
        self._file_lock = FileLock(str(self.path), thread_local=False, is_singleton=False)
        self._in_process = threading.Lock()

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
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file_lock.acquire(timeout=max(0.0, wait - (time.monotonic() - started)))
        except Timeout:
            self._in_process.release()
            raise LockTimeoutError(
                f"could not take the workspace lock {self.path} within {wait:.1f}s: held by {self.describe_holder()}"
            ) from None
        except BaseException:
            self._in_process.release()
            raise
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
            pending.add_done_callback(lambda f: f.cancelled() or f.exception() is not None or self.release())
            raise
        try:
            yield
        finally:
            self.release()

    def _write_holder(self, purpose: str) -> None:
        info = {"pid": os.getpid(), "host": socket.gethostname(), "purpose": purpose,
                "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
        # Informational only (the flock is the lock), so a plain write is enough.
        self.holder_path.write_text(json.dumps(info), encoding="utf-8")
