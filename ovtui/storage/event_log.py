"""A run's event log: ``runs/<run_id>/events.jsonl``, one JSON line per event, as they happen.

An ``EventLog`` is a listener of the run's ``EventBus``; it is flushed after every line, so a run
killed midway leaves every event before the kill, and the app or a person can follow the file live.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections import deque
from pathlib import Path
from typing import TextIO

from ovtui.core.events import Event
from ovtui.storage import fsio
from ovtui.storage.faults import fault_point, naming
from ovtui.storage.paths import WorkspacePaths
from ovtui.storage.reading import open_for_reading

EVENTS_FILE = "events.jsonl"
# A saved run replayed (the app opening on the last run) keeps its first event and this many last.
REPLAYED_EVENTS = 5000


def read_events(path: Path, *, keep_last: int = REPLAYED_EVENTS) -> list[Event]:
    """A run's saved events, read line by line: the first (``run_started``) and the last
    ``keep_last`` (a long stream's log holds hundreds of thousands); a line that is not an event
    (a run killed mid-write) is skipped."""
    first: list[Event] = []
    last: deque[Event] = deque(maxlen=keep_last)
    with open_for_reading(path) as handle:
        for line in handle:
            event = _event(line.decode("utf-8", errors="replace"))
            if event is None:
                continue
            if first:
                last.append(event)
            else:
                first.append(event)
    return [*first, *last]


def _event(line: str) -> Event | None:
    try:
        raw = json.loads(line)
    except ValueError:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("kind"), str):
        return None
    if not isinstance(raw.get("data"), dict):
        return None
    at = raw.get("at")
    return Event(raw["kind"], raw["data"], float(at) if isinstance(at, int | float) else 0.0)


class EventLog:
    def __init__(self, paths: WorkspacePaths, run_id: str) -> None:
        self.path = paths.runs / run_id / EVENTS_FILE
        fd = fsio.open_in_place(self.path, os.O_WRONLY | os.O_APPEND, root=paths.root)
        self._handle: TextIO | None = os.fdopen(fd, "a", encoding="utf-8")
        self._lock = threading.Lock()  # events come from the loop and from worker threads

    def __call__(self, event: Event) -> None:
        """Append one line. A disk that refuses it (full, read-only) raises once, naming the file,
        which stops the run there; the log then stays closed, so the run's clean-up (its last events,
        its report) is not stopped by the same disk again."""
        with self._lock:
            if self._handle is None:
                return
            try:
                with naming(self.path):
                    fault_point("write", self.path)
                    self._handle.write(event.to_json() + "\n")
                    self._handle.flush()
            except OSError:
                handle, self._handle = self._handle, None
                with contextlib.suppress(OSError):
                    handle.close()
                raise

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                handle, self._handle = self._handle, None
                with contextlib.suppress(OSError):  # the flush of a full disk: said when it was written
                    handle.close()
