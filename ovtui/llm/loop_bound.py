"""What belongs to one event loop: an HTTP connection pool, a semaphore, a lock.

A client kept by a workspace outlives the loop it was first used on: a command runs one
``asyncio.run`` after another over the same workspace (``ovtui utility`` plans, counts, then
applies). An ``openai`` client's pooled connections, and asyncio's semaphores and locks once
waited on, are tied to the loop that made them and fail on the next one ("Event loop is closed").
So such things are made per loop, on first use in it, and forgotten with their loop.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class LoopBound(Generic[T]):
    """``make()``'s value for the running loop: one per loop (loops in other threads get their
    own), dropped when its loop is garbage."""

    def __init__(self, make: Callable[[], T], close: Callable[[T], Awaitable[None]] | None = None) -> None:
        self._make = make
        self._close = close
        self._values: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # loops in two threads may ask at once

    def get(self) -> T:
        loop = asyncio.get_running_loop()
        with self._lock:
            value = self._values.get(loop)
            if value is None:
                value = self._values[loop] = self._make()
            return value

    async def aclose(self) -> None:
        """Close the running loop's value, if one was made; the next use in it makes another."""
        with self._lock:
            value = self._values.pop(asyncio.get_running_loop(), None)
        if value is not None and self._close is not None:
            await self._close(value)
