"""What a user driving ``ovtui serve`` by hand runs into (found by trying it): a session that would
outgrow what a commit can read, a session created again with an id that exists, a body that is not
JSON, a message time that is not a time, the task list's filters and fields, and the same inbox
file name dropped twice."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from server_support import threaded_server
from session_support import CONVERSATION, ok, served_sample_workspace
from workspace_support import build_sample_workspace

from ovtui.core.context import RunContext
from ovtui.core.events import Event, EventBus
from ovtui.servers.openviking.app import create_session_app
from ovtui.sessions import store as session_store
from ovtui.sessions.inbox import SessionInbox
from ovtui.wiring.workspace import Workspace


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    with served_sample_workspace(tmp_path_factory.mktemp("edges") / "ws") as served:
        yield served


def _error(response: httpx.Response, status: int) -> str:
    body = response.json()
    assert response.status_code == status, body
    assert body["status"] == "error" and body["result"] is None, body
    return str(body["error"]["message"])


def test_a_session_never_outgrows_what_its_commit_can_read(
    served: tuple[httpx.Client, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, root = served
    monkeypatch.setattr(session_store, "MAX_ROLLOUT_BYTES", 4096)  # the read limit, made small
    message = {"role": "user", "content": "x" * 1000}
    accepted = 0
    while True:
        response = client.post("/api/v1/sessions/big/messages", json=message)
        if response.status_code != 200:
            break
        accepted += 1
    assert accepted >= 2
    message_text = _error(response, 409)
    assert "big" in message_text and "commit it first" in message_text
    # what was accepted is all there and commits; after it the session takes messages again
    assert ok(client.get("/api/v1/sessions/big"))["message_count"] == accepted
    ok(client.post("/api/v1/sessions/big/commit"))
    archived = root / "sessions/big/history/archive_001/messages.jsonl"
    assert len(archived.read_text().splitlines()) == accepted
    ok(client.post("/api/v1/sessions/big/messages", json=message))


def test_creating_a_session_with_an_id_that_exists_is_refused_as_openviking_refuses_it(
    served: tuple[httpx.Client, Path],
) -> None:
    """OpenViking 0.5.2: its session service raises AlreadyExistsError, answered 409 with code
    ALREADY_EXISTS, the message its constructor builds and the resource in ``details``; the
    session keeps what it was created with, whatever the second request asked."""
    client, root = served
    policy = {"self": {"enabled": True}, "peer": {"enabled": False}, "memory_types": ["profile"]}
    ok(client.post("/api/v1/sessions", json={"session_id": "p1", "memory_policy": policy}))
    other = {**policy, "memory_types": ["preferences"]}
    for body in ({"session_id": "p1", "memory_policy": policy}, {"session_id": "p1", "memory_policy": other}):
        response = client.post("/api/v1/sessions", json=body)
        assert response.status_code == 409, response.text
        assert response.json() == {
            "status": "error",
            "result": None,
            "error": {
                "code": "ALREADY_EXISTS",
                "message": "Resource already exists: Session 'p1' already exists",
                "details": {"resource": "Session 'p1' already exists", "type": "resource"},
            },
        }
    kept = json.loads((root / "sessions/p1/meta.json").read_text())["memory_policy"]
    assert kept["memory_types"] == ["profile"]
    assert ok(client.post("/api/v1/sessions", json={"session_id": "p2"}))["session_id"] == "p2"


def test_a_body_that_is_not_json_names_the_body(served: tuple[httpx.Client, Path]) -> None:
    client, _ = served
    broken = client.post(
        "/api/v1/sessions/j1/messages",
        content=b'{"role": "user", "content": ',
        headers={"content-type": "application/json"},
    )
    assert _error(broken, 422).startswith("body: not valid JSON at character ")
    plain = client.post(
        "/api/v1/sessions/j1/messages",
        content=json.dumps({"role": "user", "content": "x"}).encode(),
        headers={"content-type": "text/plain"},
    )
    message = _error(plain, 422)
    assert "Content-Type: application/json" in message and "text/plain" in message
    assert client.get("/api/v1/sessions/j1").status_code == 404  # nothing was made


def test_a_message_time_must_be_a_time(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    bad = client.post("/api/v1/sessions/t1/messages", json={**CONVERSATION[-1], "created_at": "yesterday"})
    assert _error(bad, 422).startswith("created_at: ")
    good = {**CONVERSATION[-1], "created_at": "2026-11-30T10:00:00Z"}
    ok(client.post("/api/v1/sessions/t1/messages", json=good))
    ok(client.post("/api/v1/sessions/t1/messages", json={**CONVERSATION[-1], "created_at": ""}))
    stored = [json.loads(line) for line in (root / "sessions/t1/messages.jsonl").read_text().splitlines()]
    assert stored[0]["created_at"] == "2026-11-30T10:00:00Z" and stored[1]["created_at"]


def test_the_task_list_filters_as_openviking_does(served: tuple[httpx.Client, Path]) -> None:
    client, _ = served
    ok(client.post("/api/v1/sessions/f1/messages/batch", json={"messages": CONVERSATION}))
    task_id = ok(client.post("/api/v1/sessions/f1/commit"))["task_id"]
    finished = ok(client.get(f"/api/v1/tasks/{task_id}", params={"wait": 30}))
    assert finished["status"] == "completed", finished

    def listed(**params: str) -> list[str]:
        return [t["task_id"] for t in ok(client.get("/api/v1/tasks", params=params))]

    assert task_id in listed(task_type="session_commit", status="completed", resource_id="f1")
    assert task_id not in listed(status="failed")
    assert task_id not in listed(task_type="resource_import")
    assert listed(resource_id="f1") == [task_id]
    # OpenViking's other statuses, and one no task has, list nothing (as OpenViking answers)
    for status in ("cancelled", "cancelling", "done"):
        assert listed(status=status) == []
    [task] = ok(client.get("/api/v1/tasks", params={"resource_id": "f1"}))
    assert task["stage"] == "completed" and task["meta"] == {}
    assert task["processing_seconds"] is not None and task["processing_seconds"] >= 0
    assert task["created_at_iso"].startswith("20") and task["updated_at_iso"] >= task["created_at_iso"]


def test_an_inbox_file_dropped_again_under_the_same_name_is_committed_again(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    incoming = root / "inbox/sessions"
    incoming.mkdir(parents=True, exist_ok=True)
    conversation = "".join(json.dumps(m) + "\n" for m in CONVERSATION)

    progress: list[Event] = []

    async def run() -> SessionInbox:
        workspace = Workspace(root)
        committer = workspace.parts.session_committer(RunContext())
        inbox = workspace.agent.session_inbox(committer, EventBus([progress.append]))
        for part in (1, 2):  # the next part of the same conversation, exported under its name
            (incoming / "chat-7.jsonl").write_text(conversation.replace("1234", f"123{part}"))
            inbox.scan()
            await inbox.drain()
        await committer.close()
        return inbox

    inbox = asyncio.run(run())
    assert inbox.processed == 2 and inbox.rejected_count == 0
    # the progress the app shows ends counting both, not one behind
    last = [e.data for e in progress if e.kind == "progress"][-1]
    assert (last["done"], last["total"]) == (2, 2)
    archives = root / "sessions/chat-7/history"
    assert sorted(p.name for p in archives.iterdir()) == ["archive_001", "archive_002"]
    assert "1232" in (archives / "archive_002/messages.jsonl").read_text()
    assert len(list((root / "inbox/done").glob("chat-7*.jsonl"))) == 2


def test_a_key_is_taken_as_openviking_clients_send_it_and_refused_in_its_envelope(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    app = create_session_app(Workspace(root), api_key="s3cret", watch_inbox=False)
    with threaded_server(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        assert client.get("/health").status_code == 200  # open, as OpenViking's is
        for headers in ({}, {"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}):
            refused = client.get("/api/v1/sessions", headers=headers)
            assert refused.status_code == 401, headers
            assert refused.json()["status"] == "error" and refused.json()["result"] is None
            assert refused.json()["error"]["code"] == "UNAUTHENTICATED"
        for headers in ({"X-API-Key": "s3cret"}, {"Authorization": "Bearer s3cret"}):
            assert ok(client.get("/api/v1/sessions", headers=headers)) == []


def test_a_memory_type_the_workspace_does_not_know_is_named(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    typo = {"memory_types": ["profile", "preference"]}
    message = _error(client.post("/api/v1/sessions", json={"session_id": "m1", "memory_policy": typo}), 400)
    assert message.startswith("memory_policy.memory_types: ") and "'preference'" in message
    assert "preferences" in message  # the declared ones are listed
    assert not (root / "sessions/m1").exists()
    openviking = {"memory_types": ["profile", "tools", "skills"]}  # OpenViking's own: accepted
    ok(client.post("/api/v1/sessions", json={"session_id": "m2", "memory_policy": openviking}))


def test_sessions_are_listed_and_a_commit_that_finds_nothing_still_writes_its_diff(
    served: tuple[httpx.Client, Path],
) -> None:
    client, root = served
    ok(client.post("/api/v1/sessions/quiet/messages", json={"role": "user", "content": "Thanks, bye."}))
    listed = {s["session_id"]: s for s in ok(client.get("/api/v1/sessions"))}
    assert listed["quiet"]["uri"].endswith("/sessions/quiet")
    task_id = ok(client.post("/api/v1/sessions/quiet/commit"))["task_id"]
    task = ok(client.get(f"/api/v1/tasks/{task_id}", params={"wait": 30}))
    assert task["status"] == "completed" and task["result"]["memories_extracted"] == {}, task
    diff = json.loads((root / "sessions/quiet/history/archive_001/memory_diff.json").read_text())
    assert diff["kind"] == "session_commit" and diff["summary"]["total_adds"] == 0
    assert diff["metadata"]["history_ids"] == [] and task["result"]["history_ids"] == []
