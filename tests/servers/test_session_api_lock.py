"""`ovtui serve` never waits for a session's file lock on its event loop, nor in a thread the other
requests share: while another process holds one session's lock, a request for that session waits
(in a thread of a small pool of its own, a bounded time) and the server keeps answering every other
request; when the holder lets go, the waiting request completes. A lock held past the wait is a 503
naming the session, and so is every request for it beyond what that pool holds, at once."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from server_support import threaded_server
from workspace_support import build_sample_workspace

from ovtui.core.events import Event
from ovtui.servers.openviking.app import create_session_app
from ovtui.sessions import calls as session_calls
from ovtui.wiring.workspace import Workspace

# Takes the lock as ovtui does (filelock), says so, and keeps it until a line arrives on stdin.
HOLDER = """
import sys
from filelock import FileLock
lock = FileLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
sys.stdin.readline()
lock.release()
"""
MESSAGE = {"role": "user", "content": "Please cancel order 1234."}


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path, threading.Event]]:
    """The session API of a fresh workspace, session ``s1`` created, and an event set when the
    server reports that it waits for a session's lock (the wait long enough for any test step)."""
    monkeypatch.setattr(session_calls, "LOCK_WAIT", 60.0)
    root = build_sample_workspace(tmp_path / "ws")
    app = create_session_app(Workspace(root), watch_inbox=False)
    waiting = threading.Event()

    def listen(event: Event) -> None:
        if event.kind == "log" and "'s1' is locked by another process" in str(event.data["message"]):
            waiting.set()

    app.state.events.listeners.append(listen)
    with threaded_server(app) as url:
        with httpx.Client(base_url=url, timeout=10) as client:
            assert client.post("/api/v1/sessions", json={"session_id": "s1"}).status_code == 200
        yield url, root, waiting


def hold_lock(root: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root / "sessions/s1/lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.write("release\n")
    holder.stdin.flush()
    assert holder.wait(timeout=30) == 0


def post_message(url: str, session_id: str) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=60) as client:
        return client.post(f"/api/v1/sessions/{session_id}/messages", json=MESSAGE)


def done_first(futures: list[Future[httpx.Response]], count: int) -> list[Future[httpx.Response]]:
    """The first ``count`` of ``futures`` to finish."""
    pending = set(futures)
    while len(futures) - len(pending) < count:
        done, pending = wait(pending, timeout=30, return_when=FIRST_COMPLETED)
        assert done, f"only {len(futures) - len(pending)} of {count} answered"
    return [f for f in futures if f not in pending]


def result(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_other_requests_are_served_while_one_waits_for_a_lock_another_process_holds(
    server: tuple[str, Path, threading.Event],
) -> None:
    url, root, waiting = server
    holder = hold_lock(root)
    try:
        with ThreadPoolExecutor(1) as pool:
            blocked = pool.submit(post_message, url, "s1")
            assert waiting.wait(timeout=30), "the request for s1 never reached the lock"
            # s1's request is waiting for the lock now: the loop still serves everything else
            # (a short client timeout: a loop blocked until the lock's 30 s timeout fails here)
            with httpx.Client(base_url=url, timeout=5) as client:
                assert client.get("/health").json()["status"] == "ok"
                assert (
                    result(client.post("/api/v1/sessions", json={"session_id": "s2"}))["session_id"] == "s2"
                )
                assert result(client.post("/api/v1/sessions/s2/messages", json=MESSAGE))["message_count"] == 1
                assert result(client.get("/api/v1/sessions/s2"))["message_count"] == 1
            assert not blocked.done()  # the holder still has s1
            release(holder)
            assert result(blocked.result(timeout=30))["message_count"] == 1
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    with httpx.Client(base_url=url, timeout=10) as client:
        assert result(client.get("/api/v1/sessions/s1"))["message_count"] == 1


def test_a_lock_held_past_the_wait_is_a_503_naming_the_session(
    server: tuple[str, Path, threading.Event], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root, waiting = server
    monkeypatch.setattr(session_calls, "LOCK_WAIT", 0.3)
    holder = hold_lock(root)
    try:
        answer = post_message(url, "s1")
        assert waiting.is_set()
        assert answer.status_code == 503
        error = answer.json()["error"]
        assert error["code"] == "UNAVAILABLE" and "'s1'" in error["message"]
        assert answer.headers["retry-after"] == "1"
    finally:
        holder.kill()
        holder.wait()
    assert not (root / "sessions/s1/messages.jsonl").exists()  # nothing half-written


def test_requests_piling_on_a_held_session_never_slow_the_others(
    server: tuple[str, Path, threading.Event],
) -> None:
    url, root, waiting = server
    holder = hold_lock(root)
    try:
        with ThreadPoolExecutor(8) as pool:
            piled = [pool.submit(post_message, url, "s1") for _ in range(8)]
            assert waiting.wait(timeout=30)
            # the pool that waits holds two; every other request for s1 is answered at once
            refused = [f.result() for f in done_first(piled, 8 - session_calls.WAITERS)]
            assert all(r.status_code == 503 and "'s1'" in r.json()["error"]["message"] for r in refused)
            with httpx.Client(base_url=url, timeout=5) as client:  # served while s1's two still wait
                for n in range(5):
                    assert (
                        result(client.post("/api/v1/sessions/s2/messages", json=MESSAGE))["message_count"]
                        == n + 1
                    )
            still = [f for f in piled if not f.done()]
            assert len(still) == session_calls.WAITERS
            release(holder)
            assert sorted(result(f.result(timeout=30))["message_count"] for f in still) == [1, 2]
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()
