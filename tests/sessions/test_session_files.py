"""What faults leave in a session, and that the next writer repairs it: a write refused half way
(a real file-size limit in a child process) leaves the file as it was; a torn last line left by a
kill is put aside, named, and the session goes on; a commit SIGKILLed at each of its steps is
taken back before its commit point and completed after it; an older ovtui's interrupted commit
gives its messages back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ovtui.protocols.sessions import AddMessageRequest, SessionMessage
from ovtui.sessions.store import Committed, SessionError, SessionStore
from ovtui.storage.paths import WorkspacePaths


def said(text: str) -> SessionMessage:
    return AddMessageRequest(role="user", content=text).to_stored(f"m-{text}")


@pytest.fixture
def notices() -> list[str]:
    """What the store said about its repairs."""
    return []


@pytest.fixture
def store(tmp_path: Path, notices: list[str]) -> SessionStore:
    (tmp_path / "ws").mkdir()
    return SessionStore(WorkspacePaths(tmp_path / "ws"), on_notice=notices.append)


def texts(store: SessionStore, session_id: str) -> list[str]:
    return [m.text for m in store.messages(session_id)]


# A child that appends a batch bigger than the file-size limit it sets on itself: the kernel
# writes part of it and refuses the rest (EFBIG), as a disk that fills up half way does.
OVER_LIMIT = """
import resource, signal, sys
from ovtui.protocols.sessions import AddMessageRequest
from ovtui.sessions.store import SessionError, SessionStore
from ovtui.storage.paths import WorkspacePaths
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
store = SessionStore(WorkspacePaths(sys.argv[1]))
limit = int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
batch = [AddMessageRequest(role="user", content="y" * 1000).to_stored(f"b{n}") for n in range(100)]
try:
    store.append("s", batch)
except SessionError as exc:
    print(exc.code, exc)
"""


def test_a_batch_the_disk_refuses_half_way_leaves_the_session_as_it_was(store: SessionStore) -> None:
    store.append("s", [said("kept one"), said("kept two")])
    live = store.folder("s") / "messages.jsonl"
    before = live.read_bytes()
    limit = len(before) + 15_500  # room for 15 of the batch's lines and part of the 16th
    child = subprocess.run(
        [sys.executable, "-c", OVER_LIMIT, str(store.paths.root), str(limit)],
        capture_output=True,
        text=True,
        check=True,
    )
    code, _, message = child.stdout.strip().partition(" ")
    assert code == "UNAVAILABLE" and message.startswith("sessions/s/messages.jsonl: cannot write: "), child
    assert live.read_bytes() == before  # truncated back: no line kept of the refused batch, none torn
    store.append("s", [said("after")])
    assert texts(store, "s") == ["kept one", "kept two", "after"]


def test_a_torn_last_line_is_put_aside_and_the_session_goes_on(
    store: SessionStore, notices: list[str]
) -> None:
    store.append("s", [said("one"), said("two")])
    live = store.folder("s") / "messages.jsonl"
    with live.open("ab") as handle:
        handle.write(b'{"id": "m-3", "role": "user", "parts": [{"type": "text", "text": "thr')  # a kill
    assert texts(store, "s") == ["one", "two"]  # a reader skips it (it may be a write in progress)
    state = store.live("s")  # the lock is free: repaired
    assert state.message_count == 2
    [aside] = store.folder("s").glob("messages.jsonl.torn-*")
    assert aside.read_bytes().endswith(b'"text": "thr')
    assert live.read_bytes().endswith(b"\n")
    assert len(notices) == 1 and "sessions/s/messages.jsonl: its last line (" in notices[0]
    assert aside.name in notices[0] and "the rest of the session is intact" in notices[0]
    store.append("s", [said("three")])
    assert texts(store, "s") == ["one", "two", "three"]
    done = store.commit("s")
    assert isinstance(done, Committed) and [m.text for m in done.messages] == ["one", "two", "three"]


def test_a_whole_message_that_only_lacks_its_newline_is_kept(store: SessionStore, notices: list[str]) -> None:
    store.append("s", [said("one")])
    live = store.folder("s") / "messages.jsonl"
    with live.open("ab") as handle:
        handle.write(said("two").model_dump_json().encode())
    store.append("s", [said("three")])
    assert texts(store, "s") == ["one", "two", "three"]
    assert not list(store.folder("s").glob("messages.jsonl.torn-*")) and notices == []


def test_a_bad_line_inside_the_file_is_named_not_skipped(store: SessionStore) -> None:
    store.append("s", [said("one")])
    live = store.folder("s") / "messages.jsonl"
    live.write_bytes(live.read_bytes() + b"{oops}\n" + said("two").model_dump_json().encode() + b"\n")
    with pytest.raises(SessionError, match=r"^sessions/s/messages.jsonl:2: "):
        store.append("s", [said("three")])


# A child that commits session ``s`` (keeping the newest ``keep``) and is SIGKILLed at ``point``.
COMMIT = """
import sys
from ovtui.sessions.store import SessionStore
from ovtui.storage.paths import WorkspacePaths
store = SessionStore(WorkspacePaths(sys.argv[1]))
store.commit("s", keep_recent_count=int(sys.argv[2]), task_id="task_x", origin="api")
"""


@pytest.mark.parametrize("keep", [0, 1])
@pytest.mark.parametrize(
    ("point", "finished"),
    [
        ("session_commit:recorded", False),
        ("session_commit:archived", False),
        ("session_commit:live_replaced", True),
    ],
)
def test_a_commit_killed_at_each_step_is_taken_back_or_completed(
    store: SessionStore, notices: list[str], point: str, finished: bool, keep: int
) -> None:
    store.append("s", [said("one"), said("two"), said("three")])
    child = subprocess.run(
        [sys.executable, "-c", COMMIT, str(store.paths.root), str(keep)],
        env={**os.environ, "OVTUI_CRASH_AT": point},
        capture_output=True,
        text=True,
    )
    assert child.returncode == -9, child.stderr
    archive = store.folder("s") / "history/archive_001"
    assert archive.is_dir()  # what the kill left
    state = store.live("s")  # the next writer settles it
    if finished:
        assert [m.text for m in state.messages] == ["one", "two", "three"][3 - keep :]
        assert state.meta.commit_count == 1 and state.meta.keep_recent_count == keep
        record = json.loads((archive / "commit.json").read_text())
        assert record["task_id"] == "task_x" and record["archived_messages"] == 3 - keep
        assert len((archive / "messages.jsonl").read_text().splitlines()) == 3 - keep
        assert [a.name for a, _ in store.awaiting_memories("s")] == ["archive_001"]
    else:
        assert [m.text for m in state.messages] == ["one", "two", "three"]
        assert state.meta.commit_count == 0 and not archive.exists()
        assert store.awaiting_memories("s") == []
    assert len(notices) == 1 and "history/archive_001: a commit interrupted" in notices[0]
    store.append("s", [said("four")])
    again = store.commit("s")  # and the session goes on as if nothing happened
    assert isinstance(again, Committed) and again.archive.name == (
        "archive_002" if finished else "archive_001"
    )


def test_an_older_ovtuis_interrupted_commit_gives_its_messages_back(store: SessionStore) -> None:
    store.append("s", [said("one"), said("two")])
    folder = store.folder("s")
    archive = folder / "history/archive_001"
    archive.mkdir(parents=True)
    os.link(folder / "messages.jsonl", archive / "messages.jsonl")  # killed between link and unlink
    assert texts(store, "s") == ["one", "two"]
    store.append("s", [said("three")])
    assert not archive.exists() and texts(store, "s") == ["one", "two", "three"]

    os.makedirs(folder / "history/archive_001")
    os.rename(folder / "messages.jsonl", folder / "history/archive_001/messages.jsonl")  # after unlink
    assert store.live("s").message_count == 3 and not archive.exists()

    mine = folder / "history/archive_001"
    mine.mkdir()
    (mine / "notes.txt").write_text("a folder made by hand")
    done = store.commit("s")  # left alone: the commit takes the next number
    assert isinstance(done, Committed) and done.archive.name == "archive_002"
    assert (mine / "notes.txt").is_file()


APPEND = """
import sys
from ovtui.protocols.sessions import AddMessageRequest
from ovtui.sessions.store import SessionStore
from ovtui.storage.paths import WorkspacePaths
store = SessionStore(WorkspacePaths(sys.argv[1]))
store.append("s", [AddMessageRequest(role="user", content="two").to_stored("m2")])
"""


def test_the_temp_file_of_a_writer_killed_mid_write_is_swept(store: SessionStore) -> None:
    store.append("s", [said("one")])
    child = subprocess.run(
        [sys.executable, "-c", APPEND, str(store.paths.root)],
        env={**os.environ, "OVTUI_CRASH_AT": "temp:meta.json"},  # killed writing the meta's temp file
        capture_output=True,
        text=True,
    )
    assert child.returncode == -9, child.stderr
    assert len(list(store.folder("s").glob(".meta.json.*.tmp"))) == 1
    store.append("s", [said("three")])
    assert not list(store.folder("s").glob(".meta.json.*.tmp"))
    assert texts(store, "s") == ["one", "two", "three"]  # its whole line kept: at most once


# A child that creates session "born" and is killed writing its meta's temp file.
CREATE = """
import sys
from ovtui.sessions.store import SessionStore
from ovtui.storage.paths import WorkspacePaths
SessionStore(WorkspacePaths(sys.argv[1])).create("born")
"""


def test_folders_a_killed_creation_left_are_swept_lock_and_all(store: SessionStore) -> None:
    child = subprocess.run(
        [sys.executable, "-c", CREATE, str(store.paths.root)],
        env={**os.environ, "OVTUI_CRASH_AT": "temp:meta.json"},
        capture_output=True,
        text=True,
    )
    assert child.returncode == -9, child.stderr
    born = store.folder("born")
    assert not store.exists("born") and "lock" in os.listdir(born)
    only_lock = store.folder("locked")
    only_lock.mkdir(parents=True)
    (only_lock / "lock").write_text("")  # a kill between the lock and the temp file
    store.create("kept")
    store.sweep_unborn()
    assert not born.exists() and not only_lock.exists()
    assert store.exists("kept") and store.list_ids() == ["kept"]
    store.create("born")  # the id is free again, and its lock works
    assert store.exists("born")
