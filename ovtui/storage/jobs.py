"""Background jobs of a server: an id at once, then running → completed | failed, polled by id.

``JobStore`` keeps the jobs in memory (the latest ``keep_finished`` finished ones, and every
unfinished one) and appends each new and each finished state to ``jobs.jsonl`` under the server's
state folder (flushed to the OS at once, so a killed server loses nothing it had answered as
finished). On open the log is replayed — the last line of a job wins — jobs that were queued or
running when the previous process stopped become ``failed`` with ``INTERRUPTED``, and the log is
compacted, as it is again whenever it holds about twice the jobs kept. A lock file keeps a second
server off the same folder. Who runs the jobs is the server's (``ovtui.servers.base.pool``).
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections import deque
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
    error: str | None = None
    result: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class StateFolderBusy(OvtuiError):
    """Another server holds the state folder."""


class JobStore:
    def __init__(self, folder: Path, *, prefix: str = "job_", keep_finished: int = 100_000) -> None:
        self.folder = Path(folder)
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
        self._log = (self.folder / LOG_NAME).open("a", encoding="utf-8")

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
        atomic_write_text(path, "".join(j.model_dump_json() + "\n" for j in kept.values()), root=self.folder)
        return kept

    def create(self, label: str = "") -> Job:
        job = Job(id=f"{self.prefix}{secrets.token_hex(10)}", label=label)
        self.jobs[job.id] = job
        self._append(job)  # a restart must know this job existed to report it interrupted
        return job

    def get(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id)

    def mark_running(self, job: Job) -> None:
        job.status, job.updated_at = JobStatus.RUNNING, time.time()  # memory only: a restart fails it

    def finish(self, job: Job, *, result: dict[str, Any] | None = None, error: str | None = None) -> None:
        job.status = JobStatus.FAILED if error is not None else JobStatus.COMPLETED
        job.result, job.error, job.updated_at = result, error, time.time()
        self._finished.append(job.id)
        while len(self._finished) > self.keep:
            self.jobs.pop(self._finished.popleft(), None)
        self._append(job)

    def _append(self, job: Job) -> None:
        self._log.write(job.model_dump_json() + "\n")
        self._log.flush()
        self._log_lines += 1
        if self._log_lines > max(2 * self.keep, self.keep + 64):
            self._compact()

    def _compact(self) -> None:
        """Rewrite the log with one line per job still kept (it grows by two lines per job)."""
        self._log.close()
        text = "".join(j.model_dump_json() + "\n" for j in self.jobs.values())
        atomic_write_text(self.folder / LOG_NAME, text, root=self.folder)
        self._log = (self.folder / LOG_NAME).open("a", encoding="utf-8")
        self._log_lines = len(self.jobs)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._log.close()
        self._lock.release()
