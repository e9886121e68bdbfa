"""The order of the Sessions screen's list (read from the workspace): the most recently active
session first, whatever changed last: a message, a commit, or the state of a commit's task."""

from __future__ import annotations

import os
import time
from pathlib import Path

from workspace_support import build_sample_workspace

from ovtui.protocols.sessions import AddMessageRequest, SessionMessage
from ovtui.sessions.overview import TASKS_DIR, session_views
from ovtui.sessions.store import SessionStore
from ovtui.storage.jobs import JobStore
from ovtui.storage.paths import WorkspacePaths


def message(text: str) -> SessionMessage:
    return AddMessageRequest(role="user", content=text).to_stored(f"m-{text}")


def order(paths: WorkspacePaths) -> list[str]:
    return [view.session_id for view in session_views(paths)]


def test_sessions_are_ordered_by_their_last_activity(tmp_path: Path) -> None:
    paths = WorkspacePaths(build_sample_workspace(tmp_path / "ws"))
    store = SessionStore(paths)
    past = time.time() - 3600
    for age, session_id in enumerate(["c", "b", "a"]):  # "a" the newest: not the order of the ids
        store.create(session_id)
        store.append(session_id, [message(session_id)])
        for name in ("meta.json", "messages.jsonl"):
            os.utime(store.folder(session_id) / name, (past + age, past + age))
    assert order(paths) == ["a", "b", "c"]

    store.append("c", [message("again")])  # a message
    assert order(paths) == ["c", "a", "b"]

    archive, _ = store.archive("b")  # a commit
    assert order(paths) == ["b", "c", "a"]

    folder = store.folder("b")
    for path in (folder / "meta.json", folder / "messages.jsonl", archive.folder):
        if path.exists():
            os.utime(path, (past, past))
    assert order(paths)[-1] == "b"
    tasks = JobStore(paths.state / TASKS_DIR, prefix="task_")
    try:
        job = tasks.create(f"b:{archive.name}")  # its task changes state now
        tasks.mark_running(job)
    finally:
        tasks.close()
    assert order(paths)[0] == "b"
