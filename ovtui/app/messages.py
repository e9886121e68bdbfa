"""Messages between the kernel (events, file changes), the app and the screens.

Down (the app to the live main screens; they do not bubble back up): ``RunEvents``, ``PendingChanged``,
``HistoryChanged``, ``ExperiencesChanged``, ``MemoriesChanged``, ``SessionsChanged``, ``InboxFilesArrived``.
Up (a screen or widget to the app): ``DryRunToggled``, ``WorkspaceEdited``, ``RunFinished`` (tests and the
app's listeners wait on it).
Back (a worker to the screen or app it works for): ``WorkFailed``; each screen declares the message its
own workers answer with. A screen calls the kernel only through the ``Workspace`` facade, in a Textual
worker: an async worker awaits its coroutines (they keep the loop free), a thread worker makes its
synchronous calls (file work, plan locks) and posts what it found, never touching a widget itself.

The kernel calls listeners from its own thread. ``EventPump`` queues the events and posts one
``KernelEventsReady`` per burst (``post_message`` is thread-safe); the handler drains the queue,
keeping only the latest ``counts`` and ``progress`` per stage, so a 1,000-rollout run costs a few
repaints per frame, not one per event.
"""

from __future__ import annotations

import threading

from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import get_current_worker

from ovtui.core.events import Event
from ovtui.train.reports import RunReport


class KernelEventsReady(Message):
    """Events are waiting in the pump."""


class RunEvents(Message, bubble=False):
    """A coalesced batch of kernel events, for the run screen."""

    def __init__(self, events: list[Event]) -> None:
        super().__init__()
        self.events = events


class PendingChanged(Message, bubble=False):
    """Pending plans changed (a plan parked, a decision, an apply, stale marks). ``focus`` names a
    plan a run has just parked and now waits on: Review shows that one, not the oldest."""

    def __init__(self, focus: str | None = None) -> None:
        super().__init__()
        self.focus = focus


class HistoryChanged(Message, bubble=False):
    """A history record was written."""


class ExperiencesChanged(Message, bubble=False):
    """Experience files changed (in the app or outside it)."""


class MemoriesChanged(Message, bubble=False):
    """Memory files of a type other than experiences changed outside the app."""


class SessionsChanged(Message, bubble=False):
    """A session, a commit's archive or memory_diff, or a session task changed."""


class InboxFilesArrived(Message, bubble=False):
    """Rollout files were dropped into the inbox (workspace-relative paths)."""

    def __init__(self, paths: list[str]) -> None:
        super().__init__()
        self.paths = paths


class DryRunToggled(Message):
    """A person set Dry run to ``dry_run`` (a value, not a flip: handling it twice changes nothing)."""

    def __init__(self, dry_run: bool) -> None:
        super().__init__()
        self.dry_run = dry_run


class WorkspaceEdited(Message):
    """A screen wrote to the workspace (apply, discard, revert): the app tells the other screens."""

    def __init__(self, *, pending: bool = False, history: bool = False, experiences: bool = False) -> None:
        super().__init__()
        self.pending = pending
        self.history = history
        self.experiences = experiences


class WorkFailed(Message, bubble=False):
    """A worker's call to the kernel failed: the node it worked for reports it (a notification)."""

    def __init__(self, doing: str, error: BaseException) -> None:
        super().__init__()
        self.doing = doing
        self.error = error


class RunFinished(Message):
    """A run ended: with its report, or cancelled while it waited, or failed with ``error``."""

    def __init__(self, command: str, report: RunReport | None, error: str | None = None) -> None:
        super().__init__()
        self.command = command
        self.report = report
        self.error = error


def answer(node: MessagePump, message: Message) -> None:
    """What a thread worker found, posted to the node it works for; not when the worker was
    cancelled (a newer one of its group is on its way)."""
    if not get_current_worker().is_cancelled:
        node.post_message(message)


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
