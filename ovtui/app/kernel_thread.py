"""One background thread with its own asyncio loop, where every kernel coroutine of the app runs.

Why: the offline learner is CPU work; on the UI loop it would delay key presses. Why one loop and
not one per call: a run waiting for review awaits an ``asyncio.Event`` inside ``PendingPlans``, and
the apply that settles the plan must set that event on the same loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from contextlib import suppress
from typing import Any, TypeVar

T = TypeVar("T")


class KernelThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="ovtui-kernel", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    async def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Await a kernel coroutine from the UI loop; cancelling the caller cancels the kernel task."""
        return await asyncio.wrap_future(self.submit(coroutine))

    def new_event(self) -> asyncio.Event:
        """An Event for the kernel loop, set from any thread with ``set_event``."""
        return asyncio.Event()

    def set_event(self, event: asyncio.Event) -> None:
        self.loop.call_soon_threadsafe(event.set)

    def stop(self, timeout: float = 5.0) -> None:
        """Cancel what still runs (a run's ``finally`` saves its report), then end the thread."""
        if self.loop.is_closed():
            return
        with suppress(Exception):  # closing must not fail: the journal recovers an interrupted apply
            self.submit(_cancel_all()).result(timeout=timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


async def _cancel_all() -> None:
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
