"""The request body limit of the server base, over raw sockets to real servers: a body declared too
large is refused before it is sent, a chunked one as soon as it passes the limit, the largest batch
a session takes still goes through, and a refused request writes nothing."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx2 as httpx
import pytest
from server_support import threaded_server
from session_support import served_sample_workspace

from ovtui.core.bounds import (
    JSON_BYTES_PER_CHAR,
    MAX_BATCH_MESSAGES,
    MAX_REQUEST_BODY_BYTES,
    MAX_ROLLOUT_BYTES,
    MAX_TEXT_CHARS,
    MIB,
)
from ovtui.environments.sample.environment import SampleEnvironment
from ovtui.servers.benchmark import create_env_app
from ovtui.storage.jobs import JobStore

LIMIT = MAX_REQUEST_BODY_BYTES
BATCH_START = b'{"messages": [{"role": "user", "content": "'


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    with served_sample_workspace(tmp_path_factory.mktemp("body") / "ws") as served:
        yield served


def exchange(url: str, head: str, body: Iterable[bytes]) -> tuple[int, dict[str, str], bytes]:
    """Send ``head`` and then ``body`` piece by piece until the server stops taking it (it answered
    and closed); returns the status, headers and body of the answer, read until the server closes."""
    address = urlsplit(url)
    with socket.create_connection((address.hostname, address.port), timeout=20) as sock:
        sock.sendall(head.encode())
        for piece in body:
            try:
                sock.sendall(piece)
            except OSError:  # closed by the server after its answer: the rest is never read
                break
        received = b""
        while True:
            try:
                data = sock.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            received += data
    head_part, _, answer = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head_part.decode().split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in header_lines)
    return int(status_line.split()[1]), headers, answer


def request_head(path: str, *headers: str) -> str:
    return "\r\n".join(
        [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json", *headers, "", ""]
    )


def chunked(total: int, piece: int = MIB) -> Iterator[bytes]:
    """A chunked JSON body that starts as a batch of messages and grows to ``total`` bytes."""
    yield f"{len(BATCH_START):x}\r\n".encode() + BATCH_START + b"\r\n"
    frame = f"{piece:x}\r\n".encode() + b"x" * piece + b"\r\n"
    for _ in range(total // piece + 1):
        yield frame


def refusal(status: int, headers: dict[str, str], body: bytes) -> str:
    assert status == 413, body
    assert headers.get("connection") == "close"
    answer = json.loads(body)
    assert answer["status"] == "error" and answer["result"] is None
    assert answer["error"]["code"] == "RESOURCE_EXHAUSTED"
    message = str(answer["error"]["message"])
    assert answer["detail"] == message  # what a FastAPI client (the benchmark service's) reads
    assert f"{LIMIT} byte limit" in message
    return message


def test_a_body_declared_too_large_is_refused_before_it_is_sent(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    head = request_head("/api/v1/sessions/huge/messages/batch", f"Content-Length: {LIMIT + 1}")
    # Only the headers and a first piece go out: the answer can only come if the server did not
    # wait for the body it was told about.
    status, headers, body = exchange(str(client.base_url), head, [BATCH_START])
    assert f"is {LIMIT + 1} bytes" in refusal(status, headers, body)
    assert not (root / "sessions/huge").exists()
    assert client.get("/health").status_code == 200  # the server serves on


def test_a_chunked_body_is_refused_when_it_passes_the_limit(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    head = request_head("/api/v1/sessions/streamed/messages/batch", "Transfer-Encoding: chunked")
    status, headers, body = exchange(str(client.base_url), head, chunked(LIMIT + 1))
    assert f"passed {LIMIT} bytes" in refusal(status, headers, body)
    assert not (root / "sessions/streamed").exists()


def test_the_largest_batch_a_session_takes_goes_through(served: tuple[httpx.Client, Path]) -> None:
    """A full batch sent as Python's json sends it (non-ASCII as \\uXXXX escapes: three times the
    bytes it takes in the session's file), as large as the session's file limit allows."""
    client, root = served
    chars = (MAX_ROLLOUT_BYTES - 64 * 1024) // (2 * MAX_BATCH_MESSAGES)  # "é" is 2 bytes of UTF-8
    batch = {"messages": [{"role": "user", "content": "é" * chars}] * MAX_BATCH_MESSAGES}
    body = json.dumps(batch).encode()
    assert len(body) > 2 * MAX_ROLLOUT_BYTES
    response = client.post(
        "/api/v1/sessions/full/messages/batch", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 200, response.text[:300]
    lines = (root / "sessions/full/messages.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == MAX_BATCH_MESSAGES and json.loads(lines[-1])["parts"][0]["text"] == "é" * chars


def test_the_limit_holds_a_full_batch_of_the_longest_messages() -> None:
    """Any batch the session API's models accept passes the body limit, however its text is encoded,
    so the client gets the answer naming its field or the session's limit, not this one."""
    message = json.dumps({"role": "user", "content": "é" * MAX_TEXT_CHARS})
    assert len(message) >= MAX_TEXT_CHARS * JSON_BYTES_PER_CHAR
    full_batch = len('{"messages": []}') + MAX_BATCH_MESSAGES * (len(message) + 2)
    assert full_batch < LIMIT


def test_the_benchmark_service_refuses_in_its_own_shape(tmp_path: Path) -> None:
    app = create_env_app(SampleEnvironment(), JobStore(tmp_path / "state"))
    with threaded_server(app) as url:
        head = request_head("/v1/rollouts/execute", f"Content-Length: {LIMIT + 1}")
        status, headers, body = exchange(url, head, [b'{"case": '])
        refusal(status, headers, body)
        with httpx.Client(base_url=url) as client:
            assert client.post("/v1/cases/query", json={"limit": 1}).status_code == 200
