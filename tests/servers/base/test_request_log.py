"""A server says what it does on its output: a line per request (and per finished commit for
`ovtui serve`) after the URL, in real processes; `--quiet` prints only the URL; an output nobody
reads never stops the server."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import httpx2 as httpx
from server_support import start_cli_server, stop
from session_support import CONVERSATION, approving_sample_workspace, commit_and_wait, ok

from ovtui.servers.base.request_log import LineWriter

LINE = re.compile(r"^\d\d:\d\d:\d\d (GET|POST) (/\S*) (\d{3}) \d+ ms$")


def lines_until(proc: object, wanted: str) -> list[str]:
    """The server's output lines after the URL, up to the first holding ``wanted`` (each read
    waits on the process: no polling)."""
    stdout = proc.stdout  # type: ignore[attr-defined]
    seen: list[str] = []
    for raw in stdout:
        seen.append(raw.rstrip("\n"))
        if wanted in raw:
            return seen
    raise AssertionError(f"{wanted!r} never came; the output was {seen}")


def test_env_serve_prints_a_line_per_request(tmp_path: Path) -> None:
    proc, url = start_cli_server(["env", "serve", "sample", "--port", "0", "--state", str(tmp_path / "s")])
    try:
        assert httpx.get(f"{url}/health?secret=1").status_code == 200
        assert httpx.get(f"{url}/no/such/route").status_code == 404
        seen = lines_until(proc, "/no/such/route")
    finally:
        stop(proc)
    found = [LINE.match(line) for line in seen]
    assert all(found), seen
    assert [(m.group(1), m.group(2), m.group(3)) for m in found if m] == [
        ("GET", "/health", "200"),
        ("GET", "/no/such/route", "404"),
    ]
    assert "secret" not in "\n".join(seen)  # the path only, never the query


def test_quiet_server_output_is_empty_after_the_url(tmp_path: Path) -> None:
    proc, url = start_cli_server(
        ["env", "serve", "sample", "--port", "0", "--state", str(tmp_path / "s"), "--quiet"]
    )
    assert httpx.get(f"{url}/health").status_code == 200
    proc.terminate()
    out, _ = proc.communicate(timeout=30)
    assert out == ""


def test_ovtui_serve_prints_a_line_per_finished_commit(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    approving_sample_workspace(root)
    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            ok(client.post("/api/v1/sessions", json={"session_id": "s1"}))
            ok(client.post("/api/v1/sessions/s1/messages/batch", json={"messages": CONVERSATION}))
            assert commit_and_wait(client, "s1")["status"] == "completed"
        seen = lines_until(proc, "commit s1:archive_001")
    finally:
        stop(proc)
    assert any(LINE.match(line) and " POST /api/v1/sessions/s1/commit 200 " in line for line in seen), seen
    (commit,) = [line for line in seen if "commit s1:archive_001" in line]
    assert re.match(
        r"^\d\d:\d\d:\d\d commit s1:archive_001: 5 memory\(ies\) extracted, 2 record\(s\), ", commit
    )


class HeldStream:
    """An output nobody reads: its first write blocks until released."""

    def __init__(self, drained_after: int) -> None:
        self.released = threading.Event()
        self.written: list[str] = []
        self.drained_after = drained_after
        self.drained = threading.Event()  # what was queued is written: the queue is empty
        self.got_all = threading.Event()

    def write(self, text: str) -> int:
        self.released.wait()
        self.written.append(text)
        if sum("request" in t for t in self.written) >= self.drained_after:
            self.drained.set()
        if "last request" in text:
            self.got_all.set()
        return len(text)

    def flush(self) -> None:
        pass


def test_an_output_nobody_reads_never_blocks_the_writer_and_the_loss_is_counted() -> None:
    # The queue's 10, and maybe one the thread held before they were queued: once 10 are written,
    # the queue has room again.
    stream = HeldStream(drained_after=10)
    writer = LineWriter(stream, capacity=10)  # type: ignore[arg-type]
    for n in range(100):  # returns at once although nothing can be written
        writer.write(f"request {n}")
    stream.released.set()
    assert stream.drained.wait(timeout=30)
    writer.write("last request")
    assert stream.got_all.wait(timeout=30)
    text = "".join(stream.written)
    dropped = re.search(r"… (\d+) line\(s\) not written: nobody read the output", text)
    assert dropped is not None and int(dropped.group(1)) >= 80
    assert "request 0\n" in text and "last request\n" in text
