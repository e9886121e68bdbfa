"""A server's workers: the jobs of a ``JobStore`` run on the event loop, at most ``workers`` at
once, and new ones refused past ``max_queued`` (``PoolFull``: the route answers 429 with
Retry-After). The benchmark service runs its jobs here, the session API its commits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from ovtui.core.errors import OvtuiError
from ovtui.storage.jobs import Job, JobStore


class PoolFull(OvtuiError):
    """More jobs are waiting than the pool accepts; the client should retry later."""


class WorkerPool:
    """Runs jobs of a JobStore on the event loop, ``workers`` at a time."""

    def __init__(self, store: JobStore, workers: int = 4, *, max_queued: int = 4096) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.store = store
        self.workers = workers
        self.max_queued = max_queued
        self._slots = asyncio.Semaphore(workers)
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._done: dict[str, asyncio.Event] = {}

    @property
    def pending(self) -> int:
        return len(self._tasks)

    def check_room(self) -> None:
        if len(self._tasks) >= self.max_queued:
            raise PoolFull(f"{len(self._tasks)} jobs are waiting (limit {self.max_queued})")

    def submit(
        self, label: str, work: Callable[[], Awaitable[dict[str, Any]]], *, job_id: str | None = None
    ) -> Job:
        """A new job running ``work``. One with ``job_id`` was promised already (its id recorded
        with its input after ``check_room``): it is never refused."""
        if job_id is None:
            self.check_room()
        job = self.store.create(label, job_id)
        self._done[job.id] = asyncio.Event()
        self._tasks[job.id] = asyncio.create_task(self._run(job, work))
        return job

    async def _run(self, job: Job, work: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        try:
            async with self._slots:
                self.store.mark_running(job)
                try:
                    result = await work()
                except Exception as exc:  # the job fails with the error text; the server goes on
                    self.store.finish(job, error=f"{type(exc).__name__}: {exc}")
                else:
                    self.store.finish(job, result=result)
        finally:
            self._tasks.pop(job.id, None)
            done = self._done.pop(job.id, None)
            if done is not None:
                done.set()

    def running(self, job_id: str) -> bool:
        """Whether the job is queued or running here (False once it ended, even cancelled)."""
        return job_id in self._tasks

    async def wait(self, job_id: str, timeout: float) -> None:
        """Return when the job finishes or after ``timeout`` seconds (long polling)."""
        done = self._done.get(job_id)
        if done is not None and timeout > 0:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), timeout)

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
