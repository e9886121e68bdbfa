"""One background thread with its own asyncio loop for the app's short kernel work.

Runs (train, eval, stream) go to a worker process (``run_process``); what stays in the app is a
person's own action on the workspace, such as applying a reviewed plan: a few file writes that must
not block the UI loop. A run waiting in its process hears of the settled plan through its file.
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
