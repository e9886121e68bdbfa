"""For session tests: a conversation as an OpenViking client sends it (with fields ovtui ignores),
and the session API served on a real socket over a sample workspace."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
from server_support import start_cli_server, stop, threaded_server
from workspace_support import build_sample_workspace

from ovtui.servers.openviking.app import create_session_app
from ovtui.wiring.workspace import Workspace

CONVERSATION: list[dict[str, Any]] = [
    {
        "role": "user",
        "content": "Hi, my name is Ana Ruiz. I prefer window seats. Please cancel order 1234.",
        "role_id": "ignored-by-ovtui",
        "created_at": "2026-11-30T10:00:00Z",
    },
    {
        "role": "assistant",
        "parts": [
            {"type": "text", "text": "Let me look it up."},
            {"type": "context", "uri": "viking://user/default/memories/x.md", "abstract": "ignored"},
            {
                "type": "tool",
                "tool_id": "c1",
                "tool_name": "get_order",
                "tool_uri": "ignored",
                "tool_input": {"order_id": "1234"},
                "tool_output": '{"status": "pending"}',
                "tool_status": "completed",
            },
        ],
    },
    {
        "role": "assistant",
        "parts": [
            {
                "type": "tool",
                "tool_id": "c2",
                "tool_name": "cancel_order",
                "tool_input": {"order_id": "1234", "reason": "customer request"},
                "tool_output": "cancelled",
                "tool_status": "completed",
            }
        ],
    },
    {"role": "assistant", "content": "Order 1234 is cancelled."},
]


def approving_sample_workspace(root: Path) -> Path:
    """A sample workspace at ``root`` whose plans are applied without review."""
    build_sample_workspace(root)
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    return root


@contextmanager
def ovtui_serve(root: Path) -> Iterator[str]:
    """``ovtui serve`` of the workspace at ``root`` in its own process on 127.0.0.1; yields its URL."""
    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        yield url
    finally:
        stop(proc)


@contextmanager
def served_sample_workspace(root: Path) -> Iterator[tuple[httpx.Client, Path]]:
    """A sample workspace at ``root`` (plans applied without review) behind the session API on
    127.0.0.1; yields a client for it and the workspace root."""
    approving_sample_workspace(root)
    app = create_session_app(Workspace(root), watch_inbox=False)
    with threaded_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client, root


def ok(response: httpx.Response) -> Any:
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "ok" and body["error"] is None, body
    return body["result"]


def commit_and_wait(client: httpx.Client, session_id: str) -> dict[str, Any]:
    accepted = ok(client.post(f"/api/v1/sessions/{session_id}/commit"))
    assert accepted["status"] == "accepted" and accepted["archived"] is True
    assert accepted["archive_uri"].endswith(f"/sessions/{session_id}/history/archive_001")
    task: dict[str, Any] = {}
    for _ in range(60):  # each poll holds up to 5 s server-side until the task finishes
        task = ok(client.get(f"/api/v1/tasks/{accepted['task_id']}", params={"wait": 5}))
        if task["status"] in ("completed", "failed"):
            return task
    raise AssertionError(f"task never finished: {task}")
