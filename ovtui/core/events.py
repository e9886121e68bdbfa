"""Run events: what the kernel tells the app, the CLI progress bar and ``events.jsonl``.

The kernel never imports Textual; it calls plain callbacks with Event objects, and the app turns
them into messages. Writing them to a run's ``events.jsonl`` is one such listener
(``ovtui.storage.event_log``): this module does no I/O.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

# Every kind the kernel emits; mypy rejects an emit or a comparison with any other.
EventKind = Literal[
    "run_started",  # command, dataset, backend, epochs, approve, dry_run
    "progress",  # stage, done, total, epoch
    "counts",  # rollouts, trajectories, gradients, plans seen so far
    "log",  # message, level
    "usage",  # one model call: stage, model, tokens, cost, cached, attempts, latency
    "eval",  # a StageReport (baseline, epoch, final) and its accuracy
    "plan_validated",  # line, before, after, cases, gained, lost, flipped: a plan on validation cases
    "plan_pending",  # plan_id, items, stale?, waiting? (the run waits on it): a plan parked for review
    "plan_settled",  # plan_id, status, history_id: the plan a run waited on was applied or discarded
    "plan_applied",  # plan_id, written, deleted, errors, dry_run, history_id
    "batch_flushed",  # reason (count | age | close), gradients: a streaming trainer's batch
    "inbox_processed",  # what the inbox did with one file
    "run_finished",  # report, cancelled, failed (why the run stopped on an error, or None)
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
    """Fans events out to listeners (the app, the CLI's progress line, a run's event log).

    Listeners may be called from several threads (a run's worker threads): each must be safe for
    that; the bus itself keeps no state but the list."""

    def __init__(self, listeners: list[Listener] | None = None) -> None:
        self.listeners = list(listeners or [])

    def emit(self, kind: EventKind, **data: Any) -> Event:
        event = Event(kind, data)
        for listener in self.listeners:
            listener(event)
        return event

    def progress(self, stage: str, done: int, total: int, **extra: Any) -> None:
        self.emit("progress", stage=stage, done=done, total=total, **extra)

    def log(self, message: str, level: str = "info") -> None:
        self.emit("log", message=message, level=level)
