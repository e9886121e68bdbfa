"""Messages between the kernel (events, file changes) and the screens.

The kernel calls listeners from its own thread. ``EventPump`` queues the events and posts one
``KernelEventsReady`` per burst (``post_message`` is thread-safe); the handler drains the queue,
keeping only the latest ``counts`` and ``progress`` per stage, so a 1,000-rollout run costs a few
repaints per frame, not one per event.
"""

from __future__ import annotations

import threading

from textual.message import Message
from textual.message_pump import MessagePump

from ovtui.events import Event
from ovtui.workspace.watching import WorkspaceChanges


class KernelEventsReady(Message):
    """Events are waiting in the pump."""


class RunEvents(Message):
    """A coalesced batch of kernel events, for the run screen."""

    def __init__(self, events: list[Event]) -> None:
        super().__init__()
        self.events = events


class PendingChanged(Message):
    """Pending plans changed (a plan parked, a decision, an apply, stale marks)."""


class HistoryChanged(Message):
    """A history record was written."""


class ExperiencesChanged(Message):
    """Experience files changed (in the app or outside it)."""


class FilesChanged(Message):
    """A classified burst of workspace changes from the watcher."""

    def __init__(self, changes: WorkspaceChanges) -> None:
        super().__init__()
        self.changes = changes


class RunStateChanged(Message):
    """A run started or finished (screens enable or disable actions)."""

    def __init__(self, running: bool) -> None:
        super().__init__()
        self.running = running


def coalesce(events: list[Event]) -> list[Event]:
    """Drop ``counts`` and ``progress`` events that a later one of the same kind and stage supersedes."""
    seen: set[tuple[str, str]] = set()
    kept: list[Event] = []
    for event in reversed(events):
        if event.kind in ("counts", "progress"):
            key = (event.kind, str(event.data.get("stage", "")))
            if key in seen:
                continue
            seen.add(key)
        kept.append(event)
    kept.reverse()
    return kept


class EventPump:
    """A kernel listener that hands events to the UI thread in coalesced batches."""

    def __init__(self, target: MessagePump) -> None:
        self.target = target
        self._queue: list[Event] = []
        self._lock = threading.Lock()
        self._scheduled = False

    def __call__(self, event: Event) -> None:
        with self._lock:
            self._queue.append(event)
            if self._scheduled:
                return
            self._scheduled = True
        self.target.post_message(KernelEventsReady())

    def drain(self) -> list[Event]:
        with self._lock:
            events, self._queue = self._queue, []
            self._scheduled = False
        return coalesce(events)
