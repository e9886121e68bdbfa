"""Session commits with the LLM backend, for the tests: ``ovtui serve`` of a sample workspace whose
``[llm]`` is the fake OpenAI server running a scripted SessionModel, and a commit driven through the
real HTTP session API until its task ends."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2 as httpx
from server_support import threaded_server
from session_support import ok
from workspace_support import build_sample_workspace

from ovtui.core.fileformat import MemoryFile, parse_memory
from ovtui.servers.openviking.app import create_session_app
from ovtui.testing.openai_server import FakeOpenAIServer
from ovtui.testing.session_model import SessionModel
from ovtui.wiring.workspace import Workspace

PREFIX = "viking://user/default/"


@contextmanager
def served(
    tmp: Path, model: SessionModel, base_url: str | None = None
) -> Iterator[tuple[httpx.Client, Path, FakeOpenAIServer]]:
    """``ovtui serve`` of a fresh sample workspace whose ``[llm]`` is the fake server running ``model``."""
    root = build_sample_workspace(tmp / "ws")
    with FakeOpenAIServer(model) as fake:
        (root / "ovtui.toml").write_text(
            f'[llm]\nbackend = "openai"\nbase_url = "{base_url or fake.base_url}"\nmodel = "fake-model"\n'
            'max_retries = 1\ntimeout = 10\n[review]\npolicy = "all"\n'
        )
        app = create_session_app(Workspace(root), watch_inbox=False)
        with threaded_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
            yield client, root, fake


def commit(
    client: httpx.Client,
    session_id: str,
    messages: list[dict[str, Any]],
    memory_policy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Add ``messages`` to a session (created with ``memory_policy`` when one is given), commit it and
    wait for the task to end; returns the task."""
    if memory_policy is not None:
        ok(client.post("/api/v1/sessions", json={"session_id": session_id, "memory_policy": memory_policy}))
    ok(client.post(f"/api/v1/sessions/{session_id}/messages/batch", json={"messages": messages}))
    accepted = ok(client.post(f"/api/v1/sessions/{session_id}/commit"))
    for _ in range(60):
        task: dict[str, Any] = ok(client.get(f"/api/v1/tasks/{accepted['task_id']}", params={"wait": 5}))
        if task["status"] in ("completed", "failed"):
            return task
    raise AssertionError(f"task {accepted['task_id']} never finished")


def memory(root: Path, rel: str) -> MemoryFile:
    return parse_memory((root / rel).read_text())


def said(text: str, peer_id: str | None = None) -> list[dict[str, Any]]:
    """One user message (a peer's, given ``peer_id``) and the agent's short answer."""
    user: dict[str, Any] = {"role": "user", "content": text}
    if peer_id is not None:
        user["peer_id"] = peer_id
    return [user, {"role": "assistant", "content": "Noted."}]
