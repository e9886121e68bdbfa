"""A disk that refuses a write, answered by the servers in one line in their error shape: a full
disk 507, a read-only one 503, naming the file as the workspace knows it (never where it is)."""

from __future__ import annotations

import errno
from pathlib import Path

import httpx2 as httpx
import pytest
from server_support import start_cli_server, stop, threaded_server
from workspace_support import build_sample_workspace

from ovtui.servers.base.app import create_app
from ovtui.storage.faults import FAULT_ENV


@pytest.mark.parametrize(
    ("fault", "status", "code", "cause"),
    [
        ("ENOSPC", 507, "INSUFFICIENT_STORAGE", "No space left on device"),
        ("EROFS", 503, "UNAVAILABLE", "Read-only file system"),
    ],
)
def test_the_session_api_answers_a_refused_write_in_its_envelope(
    tmp_path: Path, fault: str, status: int, code: str, cause: str
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    proc, url = start_cli_server(
        ["serve", str(root), "--port", "0"], env={FAULT_ENV: f"{fault}:writes:{root}/sessions/*"}
    )
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            answer = client.post("/api/v1/sessions/s1/messages", json={"role": "user", "content": "hi"})
            health = client.get("/health")
    finally:
        stop(proc)
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert body["status"] == "error" and body["error"]["code"] == code
    message = body["error"]["message"]
    assert message.startswith("sessions/s1") and f": {cause}" in message and "\n" not in message
    assert str(tmp_path) not in message
    assert health.status_code == 200  # the server itself goes on


def test_any_server_answers_a_disk_error_in_one_line_without_its_folder(tmp_path: Path) -> None:
    app = create_app("t")

    @app.post("/write")
    def write() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "state" / "jobs.jsonl"))

    with threaded_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        answer = client.post("/write")
    assert answer.status_code == 507
    assert answer.json()["detail"].startswith("jobs.jsonl: No space left on device")
    assert answer.json()["error"]["code"] == "INSUFFICIENT_STORAGE"
    assert str(tmp_path) not in answer.text
