"""Session store calls of a server's use cases: in a worker thread (they touch files and take a
file lock), never waiting for a lock in a thread the other requests share.

A call first runs in the shared pool with no wait at all: a session nobody else holds (nearly
always) costs one thread hop. When another process (or another request's thread) holds the
session, the call runs again in a small pool of its own that waits at most ``LOCK_WAIT`` seconds;
when those threads are all waiting already, or the wait runs out, the answer is a 503 naming the
session at once. So a session held elsewhere for a long time never slows the others: its requests
queue nowhere.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from ovtui.sessions.store import SessionLocked, lock_wait, set_lock_wait

T = TypeVar("T")

LOCK_WAIT = 2.0  # seconds a request waits for a session another holder keeps
WAITERS = 2  # requests that may wait at once, across all sessions


class SessionCalls:
    def __init__(self, waiters: int = WAITERS) -> None:
        self._waiting = ThreadPoolExecutor(waiters, thread_name_prefix="ovtui-session-lock")
        self._free = waiters

    async def run(self, call: Callable[..., T], *args: object) -> T:
        try:
            with lock_wait(0):  # the thread runs in a copy of this context
                return await asyncio.to_thread(call, *args)
        except SessionLocked:
            if self._free == 0:
                raise
        self._free -= 1
        try:
            context = contextvars.copy_context()
            context.run(set_lock_wait, LOCK_WAIT)
            bound = functools.partial(context.run, call, *args)
            return await asyncio.get_running_loop().run_in_executor(self._waiting, bound)
        finally:
            self._free += 1

    def close(self) -> None:
        self._waiting.shutdown(wait=False, cancel_futures=True)
