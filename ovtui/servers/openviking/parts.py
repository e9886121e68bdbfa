"""What the routes of one server share: the workspace facade, its sessions (and the threads their
calls run in), the committer, the task store and the pool that runs commits (made inside the
running loop, on first use)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from ovtui.core.events import EventBus
from ovtui.servers.base.pool import WorkerPool
from ovtui.servers.openviking.session_calls import SessionCalls
from ovtui.sessions.commit import SessionCommitter
from ovtui.sessions.store import SessionStore
from ovtui.storage.jobs import JobStore
from ovtui.wiring.workspace import Workspace


@dataclass
class ServerParts:
    workspace: Workspace
    sessions: SessionStore
    committer: SessionCommitter
    tasks: JobStore
    events: EventBus
    workers: int = 4
    calls: SessionCalls = field(default_factory=SessionCalls)
    # The server's log on its output (``ovtui serve`` without --quiet): a line per finished commit.
    announce: Callable[[str], None] | None = None
    _pool: WorkerPool | None = field(default=None, init=False)

    @property
    def pool(self) -> WorkerPool:
        if self._pool is None:  # its semaphore belongs to the loop that first uses it
            self._pool = WorkerPool(self.tasks, self.workers)
        return self._pool

    def say(self, message: str, level: str = "warning") -> None:
        """A line for the server's event log; one the disk cannot take is not a request's failure."""
        with contextlib.suppress(OSError):
            self.events.log(message, level=level)

    def tell(self, line: str) -> None:
        """A line for the person who started the server (nothing when it runs quiet)."""
        if self.announce is not None:
            self.announce(line)

    @property
    def pending_tasks(self) -> int:
        return self._pool.pending if self._pool is not None else 0

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        self.calls.close()
