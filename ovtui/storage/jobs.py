"""Background jobs of a server: an id at once, then running → completed | failed, polled by id.

``JobStore`` keeps the jobs in memory (the latest ``keep_finished`` finished ones, and every
unfinished one) and appends each new and each finished state to ``jobs.jsonl`` under the server's
state folder (flushed to the OS at once, so a killed server loses nothing it had answered as
finished). On open the log is replayed — the last line of a job wins — jobs that were queued or
running when the previous process stopped become ``failed`` with ``INTERRUPTED``, and the log is
compacted, as it is again whenever it holds about twice the jobs kept. A lock file keeps a second
server off the same folder. What runs the jobs: ``ovtui.storage.job_pool``.

A log line that cannot be written (a full disk) does not fail the job: it is kept in memory, said
once to ``on_log_error``, and its next state written when the disk takes it again — a server that
records a job elsewhere first (a session commit names its task in the archive) loses nothing.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections import deque
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout
from pydantic import BaseModel, Field, ValidationError

from ovtui.core.errors import OvtuiError
from ovtui.storage.fsio import atomic_write_text

LOG_NAME = "jobs.jsonl"
LOCK_NAME = "jobs.lock"
INTERRUPTED = "interrupted: the service stopped before this job finished; submit it again"


class JobStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


FINISHED = frozenset({JobStatus.COMPLETED, JobStatus.FAILED})


class Job(BaseModel):
    id: str
    label: str = ""
    status: JobStatus = JobStatus.QUEUED
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    started_at: float | None = None  # when it began to run (None: it never did)
    error: str | None = None
    result: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def processing_seconds(self) -> float | None:
        """How long it has run (until now when still running); None before it starts."""
        if self.started_at is None:
            return None
        end = self.updated_at if self.finished else time.time()
        return max(end - self.started_at, 0.0)


class StateFolderBusy(OvtuiError):
    """Another server holds the state folder."""


class JobStore:
    def __init__(
        self,
        folder: Path,
        *,
        prefix: str = "job_",
        keep_finished: int = 100_000,
        on_log_error: Callable[[str], None] | None = None,
    ) -> None:
        self.folder = Path(folder)
        self.on_log_error = on_log_error
        self._log_failing = False
        self.folder.mkdir(parents=True, exist_ok=True)
        self.prefix = prefix
        self._lock = FileLock(str(self.folder / LOCK_NAME), timeout=0)
        try:
            self._lock.acquire()
        except Timeout:
            raise StateFolderBusy(f"{self.folder}: the state folder is in use by another server") from None
        self.keep = keep_finished
        self.jobs: dict[str, Job] = self._replay(keep_finished)
        # Finished jobs oldest first: past ``keep`` the oldest are forgotten (a poll then says 404).
        self._finished: deque[str] = deque(j.id for j in self.jobs.values())
        self._log_lines = len(self.jobs)
        self._log = self._open_log()

    def _open_log(self) -> int:
        return os.open(self.folder / LOG_NAME, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def _replay(self, keep: int) -> dict[str, Job]:
        path = self.folder / LOG_NAME
        jobs: dict[str, Job] = {}
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    job = Job.model_validate_json(line)
                except ValidationError:
                    continue  # a line cut short by a kill: the job it names reads as interrupted
                jobs[job.id] = job
        now = time.time()
        for job in jobs.values():
            if not job.finished:
                job.status, job.error, job.updated_at = JobStatus.FAILED, INTERRUPTED, now
        kept = dict(list(jobs.items())[-keep:]) if keep else {}
        text = "".join(j.model_dump_json() + "\n" for j in kept.values())
        with contextlib.suppress(OSError):  # a full disk: the log stays; its interrupted jobs fail in memory
            atomic_write_text(path, text, root=self.folder)
        return kept

    def new_id(self) -> str:
        return f"{self.prefix}{secrets.token_hex(10)}"

    def create(self, label: str = "", job_id: str | None = None) -> Job:
        """A new queued job (``job_id``: one promised before, e.g. recorded with its input)."""
        job = Job(id=job_id or self.new_id(), label=label)
        self.jobs[job.id] = job
        self._append(job)  # a restart must know this job existed to report it interrupted
        return job

    def get(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def unfinished(self) -> list[Job]:
        return [j for j in self.jobs.values() if not j.finished]

    def mark_running(self, job: Job) -> None:
        now = time.time()  # memory only: a restart fails it
        job.status, job.updated_at, job.started_at = JobStatus.RUNNING, now, job.started_at or now

    def finish(self, job: Job, *, result: dict[str, Any] | None = None, error: str | None = None) -> None:
        job.status = JobStatus.FAILED if error is not None else JobStatus.COMPLETED
        job.result, job.error, job.updated_at = result, error, time.time()
        self._finished.append(job.id)
        while len(self._finished) > self.keep:
            self.jobs.pop(self._finished.popleft(), None)
        self._append(job)

    def amend(self, job: Job, *, result: dict[str, Any] | None = None, error: str | None = None) -> None:
        """Correct a finished job's outcome (what a restart learns about an interrupted one)."""
        job.status = JobStatus.FAILED if error is not None else JobStatus.COMPLETED
        job.result, job.error, job.updated_at = result, error, time.time()
        self._append(job)

    def _append(self, job: Job) -> None:
        # Whole lines or nothing (truncated back), after a newline if a kill cut the last one short.
        line = (job.model_dump_json() + "\n").encode()
        try:
            start = os.fstat(self._log).st_size
            if start and os.pread(self._log, 1, start - 1) != b"\n":
                line = b"\n" + line
            view = memoryview(line)
            try:
                while view:
                    view = view[os.write(self._log, view) :]
            except OSError:
                os.ftruncate(self._log, start)
                raise
        except OSError as exc:
            if not self._log_failing and self.on_log_error is not None:
                self.on_log_error(f"{self.folder / LOG_NAME}: cannot write: {exc.strerror or exc}")
            self._log_failing = True
            return
        self._log_failing = False
        self._log_lines += 1
        if self._log_lines > max(2 * self.keep, self.keep + 64):
            self._compact()

    def _compact(self) -> None:
        """Rewrite the log with one line per job still kept (it grows by two lines per job)."""
        text = "".join(j.model_dump_json() + "\n" for j in self.jobs.values())
        try:
            atomic_write_text(self.folder / LOG_NAME, text, root=self.folder)
        except OSError:
            return  # a full disk: compacted when it takes the rewrite
        os.close(self._log)
        self._log = self._open_log()
        self._log_lines = len(self.jobs)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._log)
        self._lock.release()
