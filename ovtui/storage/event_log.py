"""A run's event log: ``runs/<run_id>/events.jsonl``, one JSON line per event, as they happen.

An ``EventLog`` is a listener of the run's ``EventBus``; it is flushed after every line, so a run
killed midway leaves every event before the kill, and the app or a person can follow the file live.
"""

from __future__ import annotations

import os
import threading
from typing import TextIO

from ovtui.core.events import Event
from ovtui.storage import fsio
from ovtui.storage.paths import WorkspacePaths

EVENTS_FILE = "events.jsonl"


class EventLog:
    def __init__(self, paths: WorkspacePaths, run_id: str) -> None:
        self.path = paths.runs / run_id / EVENTS_FILE
        fd = fsio.open_in_place(self.path, os.O_WRONLY | os.O_APPEND, root=paths.root)
        self._handle: TextIO | None = os.fdopen(fd, "a", encoding="utf-8")
        self._lock = threading.Lock()  # events come from the loop and from worker threads

    def __call__(self, event: Event) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.write(event.to_json() + "\n")
                self._handle.flush()

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None
