"""A server's commit tasks (phase 2 of a commit: extract, train, record): its task store, the pool
that runs them, and what the server does at its start so that every archive it answered for has
its task.

A commit archives and names its task id in ``commit.json`` in one step, then the task is added to
the job store; a kill between the two leaves an archive whose task the store never recorded. At
its start the server settles every session (what a kill left in phase 1 is finished or taken
back) and looks at each archive without a ``memory_diff.json``:

- its task unknown to the store → queued now, under the id the archive names;
- its task interrupted (it was running when the server stopped) → failed, with the route that
  submits it again: phase 2 may have written part of its memories, so a person decides;
- a task interrupted after its archive's ``memory_diff.json`` was written finished in fact: it
  reads completed, its result read back from the diff.

Commits of ``ovtui commit`` and the inbox run in place and have no task here.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ovtui.protocols.sessions import NOT_EXTRACTED
from ovtui.sessions.store import SessionError
from ovtui.storage.job_pool import WorkerPool
from ovtui.storage.jobs import INTERRUPTED, Job, JobStatus

if TYPE_CHECKING:
    from ovtui.core.events import EventBus
    from ovtui.protocols.sessions import MemoryPolicy, SessionMessage
    from ovtui.sessions.calls import SessionCalls
    from ovtui.sessions.commit import SessionCommitter
    from ovtui.sessions.store import Archive, CommitRecord, SessionStore
    from ovtui.storage.jobs import JobStore

TASK_PREFIX = "task_"


@dataclass
class Notices:
    """Where a server's session work says what happened: its event log, and the person who
    started it (``announce``: a line per finished commit; None when it runs quiet)."""

    events: EventBus
    announce: Callable[[str], None] | None = None

    def say(self, message: str, level: str = "warning") -> None:
        """A line for the server's event log; one the disk cannot take is not a request's failure."""
        with contextlib.suppress(OSError):
            self.events.log(message, level=level)

    def tell(self, line: str) -> None:
        if self.announce is not None:
            self.announce(line)


def task_label(archive: Archive) -> str:
    return f"{archive.session_id}:{archive.name}"


def commit_line(label: str, result: dict[str, Any]) -> str:
    """One line for a finished commit: what it extracted, recorded and left for review."""
    errors = result.get("errors") or []
    extracted = sum((result.get("memories_extracted") or {}).values())  # by memory type
    line = (
        f"commit {label}: {extracted} memory(ies) extracted, "
        f"{len(result.get('history_ids') or [])} record(s), "
        f"{len(result.get('pending_plans') or [])} plan(s) for review"
    )
    return line + (f"; {len(errors)} error(s): {errors[0]}" if errors else "")


def resubmit_route(session_id: str, archive_name: str) -> str:
    return f"POST /api/v1/sessions/{session_id}/archives/{archive_name}/resubmit"


def interrupted(session_id: str, archive_name: str) -> str:
    return (
        "interrupted: the server stopped before this commit's memories were written; its archive is "
        f"kept: {resubmit_route(session_id, archive_name)} commits it again"
    )


def parts_left_out(messages: list[SessionMessage]) -> dict[str, Any]:
    """The parts extraction does not read (stored in the archive all the same)."""
    counts = Counter(p.type for m in messages for p in m.parts if p.type in NOT_EXTRACTED)
    if not counts:
        return {}
    return {
        "parts_not_extracted": {
            **dict(sorted(counts.items())),
            "reason": "kept in the archive; extraction reads text and tool parts only",
        }
    }


class CommitTasks:
    def __init__(
        self,
        store: SessionStore,
        jobs: JobStore,
        committer: SessionCommitter,
        calls: SessionCalls,
        notices: Notices,
        *,
        workers: int = 4,
    ) -> None:
        self.store, self.jobs, self.committer = store, jobs, committer
        self._calls, self._notices, self._workers = calls, notices, workers
        self._pool: WorkerPool | None = None

    @property
    def pool(self) -> WorkerPool:
        if self._pool is None:  # its semaphore belongs to the loop that first uses it
            self._pool = WorkerPool(self.jobs, self._workers)
        return self._pool

    @property
    def pending(self) -> int:
        """The tasks queued or running in this process."""
        return self._pool.pending if self._pool is not None else 0

    # --- what the task routes read --------------------------------------------------------------------
    async def get(self, task_id: str, wait: float = 0.0) -> Job | None:
        """A task by id; with ``wait``, once it finished or after that many seconds (long polling)."""
        job = self.jobs.get(task_id)
        if job is not None and not job.finished and wait > 0:
            await self.pool.wait(task_id, wait)
        return job

    def listed(self) -> list[Job]:
        """Every task the store keeps (the unfinished ones and the latest finished)."""
        return list(self.jobs.jobs.values())

    async def finished(self, job: Job, poll: float) -> Job:
        """``job`` once it finished, or once this server stopped running it (cancelled): looked
        at again every ``poll`` seconds."""
        pool = self.pool
        while not job.finished and pool.running(job.id):
            await pool.wait(job.id, poll)
            job = self.jobs.get(job.id) or job
        return job

    def running_for(self, session_id: str) -> bool:
        return any(j.label.startswith(f"{session_id}:") for j in self.jobs.unfinished())

    def running_of(self, archive: Archive) -> list[str]:
        """The ids of the unfinished tasks committing ``archive``."""
        return [j.id for j in self.jobs.unfinished() if j.label == task_label(archive)]

    # --- phase 2 ------------------------------------------------------------------------------------
    def start(
        self, archive: Archive, messages: list[SessionMessage], policy: MemoryPolicy, task_id: str | None
    ) -> Job:
        notices = self._notices

        async def work() -> dict[str, Any]:
            try:
                outcome = await self.committer.commit_archive(archive, messages, policy)
            except Exception as exc:
                notices.tell(f"commit {task_label(archive)} failed: {exc}")
                raise
            result = {**outcome.task_result(), **parts_left_out(messages)}
            notices.tell(commit_line(task_label(archive), result))
            usage = result.get("token_usage", {})
            try:
                await self._calls.run(
                    self.store.record_outcome, archive.session_id, outcome.memories_extracted, usage
                )
            except (SessionError, OSError) as exc:  # the totals are a summary; the commit stands
                notices.say(f"session {archive.session_id!r}: totals not updated: {exc}", level="warning")
            return result

        return self.pool.submit(task_label(archive), work, job_id=task_id)

    # --- at the server's start ----------------------------------------------------------------------
    def _scan(self) -> list[tuple[Archive, CommitRecord, list[SessionMessage]]]:
        sessions = self.store
        try:
            sessions.sweep_unborn()
        except OSError as exc:
            self._notices.say(f"sessions: leftover temp files not removed at start: {exc}")
        found = []
        for session_id in sessions.list_ids():
            try:
                for archive, record in sessions.awaiting_memories(session_id):
                    if record.origin != "local" and record.task_id is not None:
                        found.append((archive, record, sessions.messages(session_id, archive)))
            except (SessionError, OSError) as exc:
                self._notices.say(f"session {session_id!r}: not checked at start: {exc}")
        return found

    async def recover(self) -> None:
        """Give every archive its task (see the module's docstring)."""
        tasks = self.jobs
        for archive, record, messages in await asyncio.to_thread(self._scan):
            assert record.task_id is not None
            job = tasks.get(record.task_id)
            if job is None:
                self.start(archive, messages, record.policy(), record.task_id)
                self._notices.say(
                    f"{archive.uri}: its task was never recorded; queued as {record.task_id}", "info"
                )
            elif job.status == JobStatus.FAILED and job.error == INTERRUPTED:
                tasks.amend(job, error=interrupted(archive.session_id, archive.name))
        for job in list(tasks.jobs.values()):
            if job.status == JobStatus.FAILED and job.error == INTERRUPTED:
                result = await asyncio.to_thread(self._result_from_diff, job)
                if result is not None:
                    tasks.amend(job, result=result)

    def _result_from_diff(self, job: Job) -> dict[str, Any] | None:
        session_id, _, name = job.label.partition(":")
        sessions = self.store
        try:
            diff = sessions.read_diff(sessions.archive_named(session_id, name))
        except (SessionError, OSError, ValueError):
            return None
        if diff is None:
            return None
        meta = diff.metadata
        return {
            "session_id": session_id,
            "archive_uri": diff.archive_uri,
            "memory_diff_uri": f"{diff.archive_uri}/memory_diff.json",
            **{
                k: meta[k]
                for k in ("memories_extracted", "history_ids", "pending_plans", "errors")
                if k in meta
            },
            "recovered": "the server stopped after writing this commit's memory_diff.json; read back from it",
        }

    async def close(self) -> None:
        """Cancel the tasks still running (a restarted server reads them interrupted)."""
        if self._pool is not None:
            await self._pool.close()
