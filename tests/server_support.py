"""Real servers on 127.0.0.1 for tests: an app in a thread of the test process, or an ``ovtui``
server command in a subprocess (its URL read from its first line)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2 as httpx

from ovtui.servers.base.run import bind_socket, make_server, url_of


@contextmanager
def threaded_server(app: Any) -> Iterator[str]:
    """Serve ``app`` on a free loopback port; yields the base URL. The socket listens before the
    URL is handed out, so requests made at once wait in the backlog instead of failing."""
    sock = bind_socket("127.0.0.1", 0)
    server = make_server(app)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def start_cli_server(
    args: list[str], *, env: dict[str, str] | None = None, argv: list[str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """``ovtui <args>`` (or ``argv``) in a subprocess; returns it and the URL of its first line."""
    proc = subprocess.Popen(
        argv or [sys.executable, "-m", "ovtui", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    if not first.startswith("http://"):
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"server did not start: {first!r} {err}")
    return proc, first


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def closed_port_url() -> str:
    """A loopback URL that refuses connections: a port bound a moment ago and let go."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def wait_for_task(client: httpx.Client, task_id: str) -> dict[str, Any]:
    """The task, once it completed or failed (each poll waits on the server up to 5 s)."""
    for _ in range(60):
        task: dict[str, Any] = client.get(f"/api/v1/tasks/{task_id}", params={"wait": 5}).json()["result"]
        if task["status"] in ("completed", "failed"):
            return task
    raise AssertionError("the task never finished")
