"""Run events: what the kernel tells the app, the CLI progress bar and ``events.jsonl``.

The kernel never imports Textual; it calls plain callbacks with Event objects, and the app turns
them into messages.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, TextIO

from ovtui.storage import fsio

# Every kind the kernel emits; mypy rejects an emit or a comparison with any other.
EventKind = Literal[
    "run_started",  # command, dataset, backend, epochs, approve, dry_run
    "progress",  # stage, done, total, epoch
    "counts",  # rollouts, trajectories, gradients, plans seen so far
    "log",  # message, level
    "usage",  # one model call: stage, model, tokens, cost, cached, attempts, latency
    "eval",  # a StageReport (baseline, epoch, final) and its accuracy
    "plan_validated",  # line, before, after, cases, gained, lost, flipped: a plan on validation cases
    "plan_pending",  # plan_id, items, stale?: a plan parked for review
    "plan_applied",  # plan_id, written, deleted, errors, dry_run, history_id
    "batch_flushed",  # reason (count | age | close), gradients: a streaming trainer's batch
    "inbox_processed",  # what the inbox did with one file
    "run_finished",  # report, cancelled
]


@dataclass(frozen=True)
class Event:
    kind: EventKind
    data: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, default=str)


Listener = Callable[[Event], None]


class EventBus:
    """Fans events out to listeners and, when given a file, appends them as JSON lines."""

    def __init__(
        self,
        listeners: list[Listener] | None = None,
        log_path: Path | None = None,
        *,
        root: Path | None = None,
    ) -> None:
        """``log_path`` must lie inside the workspace ``root`` (required with it)."""
        self.listeners = list(listeners or [])
        self.log_path = log_path
        self._lock = threading.Lock()
        self._handle: TextIO | None = None
        if log_path is not None:
            if root is None:
                raise ValueError("an event log needs the workspace root it must stay inside")
            fd = fsio.open_in_place(log_path, os.O_WRONLY | os.O_APPEND, root=root)
            self._handle = os.fdopen(fd, "a", encoding="utf-8")

    def emit(self, kind: EventKind, **data: Any) -> Event:
        event = Event(kind, data)
        with self._lock:
            if self._handle is not None:
                self._handle.write(event.to_json() + "\n")
                self._handle.flush()
        for listener in self.listeners:
            listener(event)
        return event

    def progress(self, stage: str, done: int, total: int, **extra: Any) -> None:
        self.emit("progress", stage=stage, done=done, total=total, **extra)

    def log(self, message: str, level: str = "info") -> None:
        self.emit("log", message=message, level=level)

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None
