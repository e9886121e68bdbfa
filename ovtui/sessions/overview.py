"""What the app's Sessions screen shows, read from the workspace without a server: each session
with its live message count, its commits (archives) with their memory_diff summary, and the
task of each commit as the server's task log last recorded it (``.ovtui/tasks/jobs.jsonl``);
the most recently active session first, so a new message or commit is seen at the top."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ovtui.core.errors import UnsafePathError
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.sessions.store import SessionError, SessionStore
from ovtui.storage.jobs import LOG_NAME, Job, JobStatus
from ovtui.storage.paths import URI_SCHEME, WorkspacePaths, split_peer

TASKS_DIR = "tasks"  # under .ovtui: the session server's task log
# Our job states in OpenViking's words.
TASK_STATUS = {
    JobStatus.QUEUED: "pending",
    JobStatus.RUNNING: "running",
    JobStatus.COMPLETED: "completed",
    JobStatus.FAILED: "failed",
}


@dataclass
class CommitView:
    archive: str
    messages: int
    task_id: str | None = None
    task_status: str = "unknown"  # no server recorded it: ``ovtui commit`` or the inbox
    task_error: str | None = None
    diff: MemoryDiff | None = None
    # The plans of the commit that still wait in Review (its memory_diff names those parked then;
    # one applied or discarded since, in the app or from the CLI, no longer waits).
    waiting: list[str] = field(default_factory=list)

    @property
    def extracted(self) -> dict[str, int]:
        found = self.diff.metadata.get("memories_extracted") if self.diff else None
        return dict(found) if isinstance(found, dict) else {}

    @property
    def peers(self) -> dict[str, dict[str, int]]:
        """Per peer: the memories routed to its space and the files written there."""
        found = self.diff.metadata.get("peers") if self.diff else None
        return (
            {str(k): dict(v) for k, v in found.items() if isinstance(v, dict)}
            if isinstance(found, dict)
            else {}
        )

    @property
    def peers_skipped(self) -> list[dict[str, Any]]:
        found = self.diff.metadata.get("peer_memories_skipped") if self.diff else None
        return [dict(s) for s in found if isinstance(s, dict)] if isinstance(found, list) else []


def memory_label(uri: str) -> str:
    """A file a commit wrote as the Sessions screen lists it: its path below ``memories/``, and
    whose it is when it lies in a peer's space (``profile.md · peer alice``)."""
    if not uri.startswith(URI_SCHEME):
        return uri
    rel = uri[len(URI_SCHEME) :].split("/", 2)[-1]  # user/<user>/<rel>
    try:
        peer, inner = split_peer(rel)
    except UnsafePathError:
        return uri
    shown = inner.removeprefix("memories/")
    return shown if peer is None else f"{shown} · peer {peer}"


@dataclass
class SessionView:
    session_id: str
    live_messages: int
    commits: list[CommitView] = field(default_factory=list)
    error: str | None = None
    # When the session last changed (seconds since the epoch): its last message, commit, memory_diff
    # or task state.
    last_activity: float = 0.0

    @property
    def last_status(self) -> str:
        return self.commits[-1].task_status if self.commits else "-"


def task_log(paths: WorkspacePaths) -> dict[str, Job]:
    """Tasks by ``<session>:<archive>`` label, the last line of each task winning."""
    log = paths.state / TASKS_DIR / LOG_NAME
    by_label: dict[str, Job] = {}
    if not log.is_file():
        return by_label
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            job = Job.model_validate_json(line)
        except ValidationError:
            continue
        by_label[job.label] = job
    return by_label


def _mtime(path: Path) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def _line_count(path: Path) -> int:
    try:
        with path.open("rb") as handle:
            return sum(1 for line in handle if line.strip())
    except FileNotFoundError:
        return 0


def session_views(paths: WorkspacePaths, waiting_plans: frozenset[str] = frozenset()) -> list[SessionView]:
    """Every session, the most recently active first (then by id); ``waiting_plans``: the plans
    that wait in Review now."""
    store = SessionStore(paths)
    tasks = task_log(paths)
    views = []
    for session_id in store.list_ids():
        folder = store.folder(session_id)
        view = SessionView(session_id, _line_count(folder / "messages.jsonl"))
        # meta.json is rewritten by every append and every archive; the live file by every append.
        view.last_activity = max(_mtime(folder / "meta.json"), _mtime(folder / "messages.jsonl"))
        for archive in store.archives(session_id):
            commit = CommitView(archive.name, _line_count(archive.messages_path))
            view.last_activity = max(view.last_activity, _mtime(archive.diff_path))
            job = tasks.get(f"{session_id}:{archive.name}")
            if job is not None:
                commit.task_id, commit.task_error = job.id, job.error
                commit.task_status = TASK_STATUS[job.status]
                view.last_activity = max(view.last_activity, job.updated_at)
            try:
                commit.diff = store.read_diff(archive)
            except (ValidationError, SessionError, OSError) as exc:
                view.error = f"{archive.name}/memory_diff.json: {exc}"
            if commit.diff is not None and job is None:
                commit.task_status = "completed"
            if commit.diff is not None:
                parked = commit.diff.metadata.get("pending_plans") or []
                commit.waiting = [str(p) for p in parked if str(p) in waiting_plans]
            view.commits.append(commit)
        views.append(view)
    views.sort(key=lambda v: v.last_activity, reverse=True)  # stable: ties stay in id order
    return views
