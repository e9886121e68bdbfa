"""The session API as a service (``workspace.agent.open_sessions``), driven without HTTP: messages
that pass a session's policy commit it, the commit's task runs to its memories, and at a server's
start an archive whose task was never recorded gets it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from session_support import CONVERSATION
from workspace_support import build_sample_workspace

from ovtui.core.context import RunContext
from ovtui.core.events import Event, EventBus
from ovtui.protocols.sessions import AddMessageRequest, AutoCommitPolicy
from ovtui.sessions.store import Committed, SessionStore
from ovtui.storage.jobs import JobStatus
from ovtui.storage.paths import WorkspacePaths
from ovtui.wiring.services.sessions import Accepted, NotCommitted, Sessions
from ovtui.wiring.workspace import Workspace

WAIT_S = 30.0  # a task's longest wait here; it ends as soon as the task does


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = build_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    return root


def messages() -> list[AddMessageRequest]:
    return [AddMessageRequest.model_validate(m) for m in CONVERSATION]


def open_sessions(
    root: Path, tasks: Path, events: list[Event], heard: list[str], *, recoverable: bool = True
) -> Sessions:
    run = RunContext("server", EventBus([events.append]), asyncio.Event())
    return Workspace(root).agent.open_sessions(
        run, tasks_folder=tasks, recoverable=recoverable, workers=2, announce=heard.append
    )


async def test_messages_past_the_policy_commit_the_session_and_the_task_writes_its_memories(
    root: Path, tmp_path: Path
) -> None:
    events: list[Event] = []
    heard: list[str] = []
    sessions = open_sessions(root, tmp_path / "tasks", events, heard)
    try:
        policy = AutoCommitPolicy(message_count_threshold=len(CONVERSATION) - 1, keep_recent_count=1)
        await sessions.create("s1", None, policy)
        added = await sessions.add("s1", messages())

        assert (added.message_count, added.added) == (len(CONVERSATION), len(CONVERSATION))
        committed = added.auto_commit
        assert isinstance(committed, Accepted)
        assert committed.archive_uri == "viking://user/default/sessions/s1/history/archive_001"
        job = await sessions.tasks.finished(committed.job, WAIT_S)
        assert job.status == JobStatus.COMPLETED, job.error
        assert job.result is not None and job.result["memory_diff_uri"].endswith(
            "archive_001/memory_diff.json"
        )
        assert (root / "sessions/s1/history/archive_001/memory_diff.json").is_file()
        assert len(heard) == 1 and heard[0].startswith("commit s1:archive_001: "), heard

        read = await sessions.read("s1")
        assert read.archives == ["archive_001"] and read.state.message_count == 1  # the kept one
        assert await sessions.tasks.get(committed.task_id) is job
        assert [j.id for j in sessions.tasks.listed()] == [committed.task_id]
        # Nothing outside the kept window now: a commit asked for archives nothing.
        assert await sessions.commit("s1", keep_recent_count=1) == NotCommitted(
            "s1", "all_within_keep_window"
        )
    finally:
        await sessions.close()


async def test_at_a_start_an_archive_whose_task_was_never_recorded_is_queued_and_runs(
    root: Path, tmp_path: Path
) -> None:
    """A server killed between archiving and recording the task: its archive names the task. A
    stdio server's archive (``recoverable`` off) is a local commit, which a start leaves alone."""
    events: list[Event] = []
    stdio = open_sessions(root, tmp_path / "stdio-tasks", [], [], recoverable=False)
    try:
        await stdio.add("local", messages())
        local = await stdio.commit("local", keep_recent_count=0)
        assert isinstance(local, Accepted)
        assert (await stdio.tasks.finished(local.job, WAIT_S)).status == JobStatus.COMPLETED
    finally:
        await stdio.close()
    (root / "sessions/local/history/archive_001/memory_diff.json").unlink()  # as if it never finished
    record = json.loads((root / "sessions/local/history/archive_001/commit.json").read_text())
    assert record["origin"] == "local"

    killed = open_sessions(root, tmp_path / "tasks", [], [])
    try:
        await killed.add("never", messages())
    finally:
        await killed.close()
    # Phase 1 as the kill left it: archived, its task id named, the task store never told.
    done = SessionStore(WorkspacePaths(root)).commit("never", task_id="task_never_recorded", origin="api")
    assert isinstance(done, Committed)

    sessions = open_sessions(root, tmp_path / "tasks", events, [])
    try:
        await sessions.tasks.recover()
        job = await sessions.tasks.get("task_never_recorded", WAIT_S)
        assert job is not None and job.label == "never:archive_001"
        assert job.status == JobStatus.COMPLETED, job.error
        assert (root / "sessions/never/history/archive_001/memory_diff.json").is_file()
        said = [e.data["message"] for e in events if e.kind == "log"]
        assert any("its task was never recorded; queued as task_never_recorded" in m for m in said), said
        assert [j.label for j in sessions.tasks.listed()] == ["never:archive_001"]  # not the local one
        assert not (root / "sessions/local/history/archive_001/memory_diff.json").exists()
    finally:
        await sessions.close()
