"""The session API on a disk that fills up (a real 3 MiB tmpfs, mounted where the machine lets the
test mount one): a batch refused half way leaves nothing, a commit refused leaves nothing archived
and the messages in place (507 naming the file), and both go through once space is freed. And at
the server's start every archive gets its task: one whose task was never recorded (a kill between
the archive and the task store) is queued under the id the archive names; one whose task was
interrupted reads failed with the route that submits it again."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from server_support import start_cli_server, stop, threaded_server
from session_support import CONVERSATION, ok
from workspace_support import build_sample_workspace

from ovtui.protocols.sessions import AddMessageRequest
from ovtui.servers.openviking.app import create_session_app
from ovtui.sessions.overview import TASKS_DIR
from ovtui.sessions.session_files import LOCK
from ovtui.sessions.store import Committed, SessionStore
from ovtui.storage import fsio
from ovtui.storage.fsio import CRASH_AT_ENV
from ovtui.storage.jobs import JobStore
from ovtui.storage.paths import WorkspacePaths
from ovtui.wiring.workspace import Workspace

TMPFS_BYTES = 3 * 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a fresh 3 MiB tmpfs (skipped where mounting one is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.umount2(str(mount).encode(), 2)  # MNT_DETACH: the server's files may still be open


def fill(disk: Path, leave: int = 0) -> Path:
    """Fill ``disk`` with one file until a write fails, then give back ``leave`` bytes."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        chunk = b"\0" * 65536
        while True:
            try:
                if os.write(fd, chunk) == 0:
                    break
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]  # the last pages, down to the last byte
        os.ftruncate(fd, max(os.fstat(fd).st_size - leave, 0))
    finally:
        os.close(fd)
    return filler


@pytest.fixture
def served_on_small_disk(small_disk: Path) -> Iterator[tuple[httpx.Client, Path, Path]]:
    root = build_sample_workspace(small_disk / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    app = create_session_app(Workspace(root), watch_inbox=False)
    with threaded_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client, root, small_disk


def test_a_full_disk_refuses_a_batch_and_a_commit_whole_and_both_go_through_after(
    served_on_small_disk: tuple[httpx.Client, Path, Path],
) -> None:
    client, root, disk = served_on_small_disk
    ok(client.post("/api/v1/sessions/s1/messages/batch", json={"messages": CONVERSATION}))
    live = root / "sessions/s1/messages.jsonl"
    before = live.read_bytes()

    filler = fill(disk, leave=16 * 1024)  # room for part of the batch
    batch = {"messages": [{"role": "user", "content": f"{n} " + "x" * 1000} for n in range(100)]}
    refused = client.post("/api/v1/sessions/s1/messages/batch", json=batch)
    assert refused.status_code == 507, refused.text
    error = refused.json()["error"]
    assert error["code"] == "INSUFFICIENT_STORAGE"
    assert error["message"] == "sessions/s1/messages.jsonl: cannot write: No space left on device"
    assert live.read_bytes() == before  # not a line of it kept, none torn

    filler.unlink()
    fill(disk)  # nothing left at all
    for keep in (0, 2):
        commit = client.post("/api/v1/sessions/s1/commit", json={"keep_recent_count": keep})
        assert commit.status_code == 507, commit.text
        message = commit.json()["error"]["message"]
        assert message.startswith("sessions/s1/history/archive_001/") and message.endswith(
            "No space left on device"
        )
        assert not (root / "sessions/s1/history/archive_001").exists()  # nothing archived
        assert live.read_bytes() == before  # the messages in place
        assert ok(client.get("/api/v1/sessions/s1"))["message_count"] == len(CONVERSATION)  # reads work
    assert ok(client.get("/api/v1/tasks")) == []  # and no task was made

    (disk / "filler").unlink()
    ok(client.post("/api/v1/sessions/s1/messages/batch", json=batch))
    accepted = ok(client.post("/api/v1/sessions/s1/commit"))
    task = ok(client.get(f"/api/v1/tasks/{accepted['task_id']}", params={"wait": 30}))
    assert task["status"] == "completed", task
    archived = (root / "sessions/s1/history/archive_001/messages.jsonl").read_text().splitlines()
    assert len(archived) == len(CONVERSATION) + 100
    assert (root / "sessions/s1/history/archive_001/memory_diff.json").is_file()


def _approve_all(root: Path) -> Path:
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    return root


def _conversation(store: SessionStore, session_id: str) -> None:
    messages = [AddMessageRequest.model_validate(m).to_stored(store.next_message_id()) for m in CONVERSATION]
    store.append(session_id, messages)


def _phase_one(root: Path, session_id: str, task_id: str) -> None:
    """What a server killed right after archiving leaves: the archive naming a task the task store
    never recorded."""
    store = SessionStore(WorkspacePaths(root))
    _conversation(store, session_id)
    assert isinstance(store.commit(session_id, task_id=task_id, origin="api"), Committed)


def test_the_server_start_gives_every_archive_its_task(tmp_path: Path) -> None:
    root = _approve_all(build_sample_workspace(tmp_path / "ws"))
    _phase_one(root, "never", "task_never_recorded")
    _phase_one(root, "cut", "task_interrupted")
    _phase_one(root, "diffed", "task_finished_unrecorded")
    tasks = JobStore(root / ".ovtui" / TASKS_DIR, prefix="task_")
    for session_id, task_id in (("cut", "task_interrupted"), ("diffed", "task_finished_unrecorded")):
        tasks.mark_running(tasks.create(f"{session_id}:archive_001", task_id))  # running at the kill
    tasks.close()
    diff = {
        "kind": "session_commit",
        "archive_uri": "viking://user/default/sessions/diffed/history/archive_001",
    }
    (root / "sessions/diffed/history/archive_001/memory_diff.json").write_text(
        json.dumps({**diff, "metadata": {"memories_extracted": {"profile": 1}, "history_ids": ["h1"]}})
    )
    local = SessionStore(WorkspacePaths(root))
    _conversation(local, "cli")
    assert isinstance(local.commit("cli"), Committed)  # ``ovtui commit``'s: no task of the server's

    app = create_session_app(Workspace(root), watch_inbox=False)
    with threaded_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        queued = ok(client.get("/api/v1/tasks/task_never_recorded", params={"wait": 30}))
        assert queued["status"] == "completed" and queued["resource_id"] == "never", queued
        assert (root / "sessions/never/history/archive_001/memory_diff.json").is_file()

        cut = ok(client.get("/api/v1/tasks/task_interrupted"))
        assert cut["status"] == "failed"
        route = "POST /api/v1/sessions/cut/archives/archive_001/resubmit"
        assert cut["error"].startswith("interrupted: ") and route in cut["error"], cut
        again = ok(client.post("/api/v1/sessions/cut/archives/archive_001/resubmit"))
        assert (
            ok(client.get(f"/api/v1/tasks/{again['task_id']}", params={"wait": 30}))["status"] == "completed"
        )

        finished = ok(client.get("/api/v1/tasks/task_finished_unrecorded"))
        assert finished["status"] == "completed", finished
        assert finished["result"]["memories_extracted"] == {"profile": 1}
        assert finished["result"]["history_ids"] == ["h1"]
        assert [
            t["resource_id"] for t in ok(client.get("/api/v1/tasks", params={"resource_id": "cli"}))
        ] == []


def test_a_session_killed_while_its_meta_was_written_is_no_session_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """A real ``ovtui serve`` SIGKILLed mid-write of a new session's meta: the restarted server
    removes the dead writer's temp file, lists no such session, and the session is made afresh."""
    root = build_sample_workspace(tmp_path / "ws")
    folder = root / "sessions" / "fresh"
    proc, url = start_cli_server(["serve", str(root), "--port", "0"], env={CRASH_AT_ENV: "temp:meta.json"})
    try:
        with httpx.Client(base_url=url, timeout=30) as client, pytest.raises(httpx.TransportError):
            client.post("/api/v1/sessions/fresh/messages", json={"role": "user", "content": "hello"})
        assert proc.wait(timeout=60) == -signal.SIGKILL
    finally:
        stop(proc)
    left = {p.name for p in folder.iterdir()}
    assert LOCK in left and any(fsio.is_temp_name(name) for name in left), left  # killed mid-write

    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            listed = ok(client.get("/api/v1/sessions"))  # answered once the start's recovery is done
            assert not folder.exists()  # its temp removed, then the folder left holding a lock only
            assert "fresh" not in {s["session_id"] for s in listed}, listed
            ok(client.post("/api/v1/sessions/fresh/messages", json={"role": "user", "content": "hello"}))
            assert ok(client.get("/api/v1/sessions/fresh"))["message_count"] == 1
    finally:
        stop(proc)
