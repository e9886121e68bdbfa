"""What the Run screen shows, folded from kernel events (no Textual: unit-testable on its own).

No clocks, run ids or ETAs appear here, so a screen built from the same events looks the same; the
log's timestamps come from the events themselves (``Event.at``).

Each bar keeps one denominator for the whole run and says which: the first row counts the rollouts
of the current stage, the other three count against the training rollouts of the whole run.
"""

from __future__ import annotations

import math
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any

from ovtui.core.events import Event
from ovtui.train.reports import StageReport, describe_inbox_processed, describe_plan_applied

TRAINING = ("trajectories", "gradients", "plans")  # the rows that count a run's training
INBOX_STAGE = "stream"  # the progress of a stream's inbox: files handled of files seen

USAGE_TOTAL = "total"  # a report's usage: one entry per stage, and their sum under this name
STAGE_FIELDS = tuple(StageReport.model_fields)  # an eval event is a StageReport and its accuracy

STAGE_NAMES = {
    "baseline_eval": "baseline eval",
    "train_rollouts": "training",
    "final_eval": "final eval",
    "eval": "eval",
}


@dataclass
class Accuracy:
    stage: str
    passed: int
    cases: int

    @property
    def value(self) -> float:
        return self.passed / self.cases if self.cases else 0.0


@dataclass
class RunProgress:
    command: str = ""
    batch_size: int = 8
    run_id: str | None = None
    epochs: int = 1
    stage: str = ""
    epoch: int = 0
    done: int = 0
    total: int = 0
    train_total: int = 0
    counts: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(("rollouts", "trajectories", "gradients", "plans"), 0)
    )
    usage: dict[str, float] = field(default_factory=dict)
    baseline: Accuracy | None = None
    latest: Accuracy | None = None
    finished: bool = False
    cancelled: bool = False
    failed: str | None = None
    # The plans this run sent to review and still pending (one applied in Review leaves it).
    sent_to_review: set[str] = field(default_factory=set)
    # The plan the run waits on now (a person must settle it before the run goes on) and its size.
    waiting_on: str | None = None
    waiting_items: int = 0
    inbox_files: int = 0  # a stream's files trained on (not the ones skipped as taken before)
    inbox_handled: int = 0  # a stream's files done with: trained on, skipped or rejected
    inbox_seen: int = 0
    # What the charts draw: each evaluation and epoch as the run reported it, and the model's
    # tokens and cost per stage; each version changes whenever its data does.
    stages: list[StageReport] = field(default_factory=list)
    stage_usage: dict[str, dict[str, float]] = field(default_factory=dict)
    stages_version: int = 0
    usage_version: int = 0
    # The case service's last failed try while no stage has started: attempt, attempts, url, reason.
    connecting: dict[str, Any] | None = None

    def apply(self, event: Event) -> None:
        data = event.data
        if event.kind == "run_started":
            self.run_id = str(data.get("run_id") or "")
            self.command = str(data.get("command") or self.command)
            self.epochs = int(data.get("epochs") or 1)
        elif event.kind == "progress" and data.get("stage") == INBOX_STAGE:
            self.inbox_handled, self.inbox_seen = int(data.get("done", 0)), int(data.get("total", 0))
        elif event.kind == "log" and isinstance(data.get("retry"), dict):
            self.connecting = None if self.stage else data["retry"]
        elif event.kind == "progress":
            self.connecting = None
            self.stage, self.epoch = str(data.get("stage", "")), int(data.get("epoch") or 0)
            self.done, self.total = int(data.get("done", 0)), int(data.get("total", 0))
            if self.stage == "train_rollouts":
                self.train_total = self.total
        elif event.kind == "counts":
            self.counts.update({k: int(v) for k, v in data.items() if k in self.counts})
        elif event.kind == "usage":
            self._add_usage(data)
            self.usage_version += 1
        elif event.kind == "eval":
            self._eval(data)
            self.stages.append(StageReport.model_validate({k: data[k] for k in STAGE_FIELDS if k in data}))
            self.stages_version += 1
        elif event.kind == "plan_pending":
            self.sent_to_review.add(str(data.get("plan_id")))
            if data.get("waiting"):
                self.waiting_on, self.waiting_items = str(data.get("plan_id")), int(data.get("items") or 0)
        elif event.kind == "plan_settled" and data.get("plan_id") == self.waiting_on:
            self.waiting_on = None
        elif event.kind == "inbox_processed":
            self.inbox_files += 0 if data.get("taken_before") else 1
        elif event.kind == "run_finished":
            self.finished = True
            self.waiting_on = None
            # A run stopped while it waited is cancelled, whatever its last event says.
            self.cancelled = self.cancelled or bool(data.get("cancelled"))
            if data.get("failed"):
                self.failed = str(data["failed"])
            report = data.get("report") or {}
            report_usage = report.get("usage") or {}
            if report_usage:
                self.usage = totals(report_usage)
                self.stage_usage = {
                    stage: dict(figures) for stage, figures in report_usage.items() if stage != USAGE_TOTAL
                }
            if report.get("stages"):
                self.stages = [StageReport.model_validate(stage) for stage in report["stages"]]
                self.stages_version += 1
            self.usage_version += 1

    def fail(self, error: str) -> None:
        """The run raised: the status says so, even if a ``run_finished`` event arrives later."""
        self.failed = error

    def cancel(self) -> None:
        self.finished = self.cancelled = True

    def _add_usage(self, data: dict[str, Any]) -> None:
        if data.get("cached"):
            return
        stage = self.stage_usage.setdefault(str(data.get("stage") or "other"), {})
        for key in ("prompt_tokens", "completion_tokens", "cost"):
            self.usage[key] = self.usage.get(key, 0) + float(data.get(key) or 0)
            stage[key] = stage.get(key, 0) + float(data.get(key) or 0)

    def _eval(self, data: dict[str, Any]) -> None:
        stage = str(data.get("stage", ""))
        found = Accuracy(stage, int(data.get("passed", 0)), int(data.get("cases", 0)))
        if stage == "baseline_eval":
            self.baseline = found
        elif stage in ("final_eval", "eval") or self.latest is None or self.latest.stage == "train_epoch":
            self.latest = found

    def still_pending(self, pending: set[str]) -> None:
        """Of the plans sent to review, keep the ones still pending (the rest were settled)."""
        self.sent_to_review &= pending

    def _in_review(self) -> str:
        count = len(self.sent_to_review)
        return f" · {count} plan(s) in review" if count else ""

    def stage_rows(self) -> list[tuple[str, int, int | None, str]]:
        """(stage, done, total, text) for the four progress rows."""
        c = self.counts
        run_rollouts = self.train_total * self.epochs or None
        run_batches = math.ceil(self.train_total / max(1, self.batch_size)) * self.epochs or None
        if self.command == "stream":  # no known end: counts, not fractions
            return [
                ("rollouts", 0, None, self.inbox_line()),
                ("trajectories", 0, None, f"{c['trajectories']} trajectories from {c['rollouts']} rollouts"),
                ("gradients", 0, None, f"{c['gradients']} edits"),
                ("plans", 0, None, f"{c['plans']} plans"),
            ]
        if self.command == "eval":  # nothing trains: say so rather than count against no total
            return [
                self._cases_row(),
                *((stage, 0, None, "none: an eval does not train") for stage in TRAINING),
            ]
        # The run's size is known once its training split is: until then, counts without a total.
        of_run = f"{c['rollouts']}/{run_rollouts} of run" if run_rollouts else "no total yet"
        plans = (
            f"{c['plans']}/{run_batches} batch plans of run"
            if run_batches
            else f"{c['plans']} plans · no total yet"
        )
        return [
            self._cases_row(),
            ("trajectories", c["rollouts"], run_rollouts, f"{c['trajectories']} trajectories · {of_run}"),
            ("gradients", c["rollouts"], run_rollouts, f"{c['gradients']} edits · {of_run}"),
            ("plans", c["plans"], run_batches, plans),
        ]

    def _cases_row(self) -> tuple[str, int, int | None, str]:
        if not self.stage and self.failed is not None:  # not "connecting…" under a FAILED status
            return ("rollouts", 0, None, "failed before its first cases")
        if not self.stage and self.finished:
            return ("rollouts", 0, None, "stopped before its first cases")
        if not self.stage:  # no stage has its cases yet (a remote service may still be answering)
            return ("rollouts", 0, None, "connecting…" if self.connecting else "waiting for the first cases")
        return ("rollouts", self.done, self.total or None, f"{self.done}/{self.total} {self.stage_name()}")

    def stage_name(self) -> str:
        """The current stage, with the epoch while training (the first row's denominator is per stage)."""
        stage = STAGE_NAMES.get(self.stage, self.stage)
        if self.stage == "train_rollouts":
            return f"{stage}, epoch {self.epoch + 1}/{self.epochs}"
        return stage

    def inbox_line(self) -> str:
        """A stream's files: the ones it has seen, and of those the ones trained on, the ones still
        in training (a rollout is analyzed at once; its file is done when its batch is applied),
        and the ones skipped or rejected."""
        in_training = self.inbox_seen - self.inbox_handled
        other = self.inbox_handled - self.inbox_files
        return (
            f"{self.inbox_seen} inbox file(s): {self.inbox_files} trained on · {in_training} in training"
            f" · {other} skipped or rejected"
        )

    def status_line(self) -> str:
        if not self.command:
            return "idle"
        if self.failed is not None:
            return f"{self.command}: FAILED — {self.failed}"
        if self.finished:
            if self.command == "stream" and not self.cancelled:
                return "stream: stopped"  # a stream has no end of its own: stopping is its end
            return f"{self.command}: {'cancelled' if self.cancelled else 'finished'}"
        if self.waiting_on is not None:
            waits = " · new inbox files wait too" if self.command == "stream" else ""
            return (
                f"{self.command}: WAITING FOR YOUR REVIEW — plan {self.waiting_on} "
                f"({self.waiting_items} item(s)): press 2{waits}"
            )
        if self.command == "stream" and self.run_id:
            waiting = self._in_review()
            return f"stream: watching inbox/rollouts/ · {self.inbox_files} file(s) trained on{waiting}"
        if self.connecting is not None:
            retry = self.connecting
            return (
                f"{self.command}: connecting — {retry.get('url')}: try {retry.get('attempt')} of "
                f"{retry.get('attempts')} failed ({retry.get('reason')}), trying again"
            )
        where = STAGE_NAMES.get(self.stage, self.stage or "starting")
        epoch = f", epoch {self.epoch + 1}/{self.epochs}" if self.stage == "train_rollouts" else ""
        waiting = self._in_review()
        return f"{self.command}: running — {where}{epoch}{waiting}"


def totals(usage: dict[str, dict[str, float]]) -> dict[str, float]:
    """A report's usage summed over its stages (its own ``total`` is their sum already)."""
    keys = ("prompt_tokens", "completion_tokens", "cost")
    stages = [figures for name, figures in usage.items() if name != USAGE_TOTAL]
    return {k: sum(float(stage.get(k, 0)) for stage in stages) for k in keys}


def usage_line(backend: str, usage: dict[str, float], *, uses_model: bool = True) -> str:
    """The run's model tokens and cost so far; a backend that uses no model says it has none."""
    if not uses_model:
        return f"LLM: {backend} backend (no tokens, no cost)"
    prompt, completion = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
    cost = usage.get("cost", 0)
    return f"LLM: {backend} · tokens {prompt:,} prompt + {completion:,} completion · cost ${cost:.4f}"


def accuracy_line(progress: RunProgress) -> str:
    base, now = progress.baseline, progress.latest
    if base is None and now is None:
        return "accuracy: no evaluation yet"
    parts = []
    if base is not None:
        parts.append(f"baseline {base.value:.2%} ({base.passed}/{base.cases})")
    if now is not None:
        label = "train" if now.stage == "train_epoch" else "now"
        parts.append(f"{label} {now.value:.2%} ({now.passed}/{now.cases})")
    line = "accuracy: " + " → ".join(parts)
    if base is not None and now is not None and now.stage != "train_epoch":
        line += f"  ({(now.value - base.value) * 100:+.2f}pp)"
    return line


# A wrapped log line's continuation starts under the text, past the time stamp ("HH:MM:SS ").
CONTINUATION = " " * 9


def wrapped(line: str, width: int) -> list[str]:
    """A log line (a reason may hold several) in pieces of at most ``width`` characters, broken
    between words where it can be; as it is while the width is not known yet."""
    lines = line.splitlines() or [line]
    if width <= len(CONTINUATION) + 10:
        return lines
    pieces: list[str] = []
    for index, text in enumerate(lines):
        indent = "" if index == 0 else CONTINUATION
        pieces += textwrap.wrap(
            text, width, initial_indent=indent, subsequent_indent=CONTINUATION, break_on_hyphens=False
        ) or [text]
    return pieces


def clock(at: float) -> str:
    """A log timestamp: local wall-clock time of day."""
    return time.strftime("%H:%M:%S", time.localtime(at))


def log_line(event: Event) -> str | None:
    """The run log's line for an event, stamped with when the kernel sent it."""
    line = describe_event(event)
    return None if line is None else f"{clock(event.at)} {line}"


def describe_event(event: Event) -> str | None:
    """One log line for an event, or None for the ones shown as progress bars."""
    data = event.data
    if event.kind == "run_started":
        if data.get("command") == "stream":
            return f"stream started: watching inbox/rollouts/ ({data.get('backend')})"
        return f"{data.get('command')} started: dataset {data.get('dataset')} ({data.get('backend')})"
    if event.kind == "log":
        level = str(data.get("level", "info"))
        return f"{'' if level == 'info' else level.upper() + ': '}{data.get('message')}"
    if event.kind == "eval":
        accuracy = float(data.get("accuracy", 0.0))
        # A baseline or `ovtui eval` is outside the epochs: its -1 is no epoch to name.
        number = data.get("epoch")
        epoch = f" epoch={number}" if isinstance(number, int) and number >= 0 else ""
        return (
            f"[{data.get('stage')}]{epoch} cases={data.get('cases')} "
            f"accuracy={accuracy:.2%} passed={data.get('passed')}/{data.get('cases')}"
        )
    if event.kind == "plan_pending":
        stale = ", stale" if data.get("stale") else ""
        waits = "; the run waits for your review (press 2)" if data.get("waiting") else ""
        return f"plan {data.get('plan_id')}: {data.get('items')} item(s) wait for review{stale}{waits}"
    if event.kind == "plan_settled":
        if data.get("status") == "applied" and not data.get("history_id"):
            return f"plan {data.get('plan_id')} settled, nothing written (no item approved): the run goes on"
        return f"plan {data.get('plan_id')} {data.get('status')}: the run goes on"
    if event.kind == "plan_applied":
        return describe_plan_applied(data)
    if event.kind == "run_finished":
        if data.get("failed"):
            return f"run failed: {data['failed']}"
        return (
            "run cancelled: everything applied so far is recorded"
            if data.get("cancelled")
            else "run finished"
        )
    if event.kind == "inbox_processed":
        return f"inbox: {describe_inbox_processed(data)}"
    return None
