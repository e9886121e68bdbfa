"""The session API over a real socket on 127.0.0.1, with the requests an OpenViking client sends
(fields ovtui ignores included): sessions, messages, commit → task → memory_diff → History →
revert, MemoryPolicy, hostile session ids, a failing commit, concurrent commits."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import quote

import httpx2 as httpx
import pytest
from session_support import CONVERSATION, commit_and_wait, ok, served_sample_workspace

from ovtui.cli.main import main as cli_main
from ovtui.memory.memory_diff import MemoryDiff, same_memory


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    with served_sample_workspace(tmp_path_factory.mktemp("sessions") / "ws") as served:
        yield served


def test_commit_task_memory_diff_history_revert(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    created = ok(client.post("/api/v1/sessions", json={"session_id": "s1", "unknown_field": 1}))
    assert created["session_id"] == "s1"
    ok(client.post("/api/v1/sessions/s1/messages", json=CONVERSATION[0]))
    added = ok(client.post("/api/v1/sessions/s1/messages/batch", json={"messages": CONVERSATION[1:]}))
    assert added["message_count"] == 4
    assert ok(client.get("/api/v1/sessions/s1"))["message_count"] == 4

    task = commit_and_wait(client, "s1")
    assert task["status"] == "completed", task
    assert task["task_type"] == "session_commit" and task["resource_id"] == "s1"
    result = task["result"]
    assert result["memories_extracted"] == {"profile": 1, "preferences": 1, "entities": 2, "cases": 1}
    assert result["token_usage"]["model_calls"] == 0 and result["token_usage"]["total_tokens"] == 0
    archive = root / "sessions/s1/history/archive_001"
    assert len((archive / "messages.jsonl").read_text().splitlines()) == 4
    diff = MemoryDiff.model_validate_json((archive / "memory_diff.json").read_text())
    assert diff.kind == "session_commit" and diff.archive_uri == result["archive_uri"]
    assert diff.summary.total_adds + diff.summary.total_updates >= 1
    assert len(result["history_ids"]) == 2  # the user memories' record and the training's
    assert diff.metadata["history_ids"] == result["history_ids"]
    # the live session is empty again; the commit shows in the task list
    assert ok(client.get("/api/v1/sessions/s1"))["message_count"] == 0
    listed = ok(client.get("/api/v1/tasks", params={"task_type": "session_commit", "status": "completed"}))
    assert task["task_id"] in [t["task_id"] for t in listed]

    # every record the commit made is a History record; reverting them restores the files
    assert (root / "memories/profile.md").is_file()
    # (a file both records touched goes back to what it was before the first: the trajectory gains
    # a backlink in each, the case file added by one gains links to the experiences in the other)
    # (the trajectory the analysis wrote is an add, as OpenViking lists it, but write-once
    # evidence outside the History records: a revert takes back the backlinks written into it)
    trajectories = [
        root / o.uri.split("/default/", 1)[1] for o in diff.operations.adds if o.memory_type == "trajectories"
    ]
    assert trajectories and not [o for o in diff.operations.updates if o.memory_type == "trajectories"]
    added = [
        root / op.uri.split("/default/", 1)[1]
        for op in diff.operations.adds
        if op.memory_type != "trajectories"
    ]
    updated: dict[Path, str] = {}
    for op in diff.operations.updates:
        path = root / op.uri.split("/default/", 1)[1]
        if path not in added:
            updated.setdefault(path, op.before)
    assert added  # (the updates, if any, are backlinks written into files that existed)
    for history_id in reversed(result["history_ids"]):
        assert cli_main(["revert", history_id, "--workspace", str(root)]) == 0
    for path, before in updated.items():
        assert same_memory(path.read_text(), before)  # a revert is a write: version moves on
    assert not any(path.exists() for path in added)
    assert all(path.exists() for path in trajectories)


def test_invalid_fields_are_named(served: tuple[httpx.Client, Path]) -> None:
    client, _ = served
    bad_role = client.post("/api/v1/sessions/s2/messages", json={"role": "robot", "content": "x"})
    assert bad_role.status_code == 422
    assert bad_role.json()["status"] == "error" and "role" in bad_role.json()["error"]["message"]
    neither = client.post("/api/v1/sessions/s2/messages", json={"role": "user"})
    assert neither.status_code == 422 and "content" in neither.json()["error"]["message"]
    bad_status = client.post(
        "/api/v1/sessions/s2/messages",
        json={"role": "assistant", "parts": [{"type": "tool", "tool_status": "exploded"}]},
    )
    assert bad_status.status_code == 422 and "tool_status" in bad_status.json()["error"]["message"]
    too_many = client.post(
        "/api/v1/sessions/s2/messages/batch", json={"messages": [{"role": "user", "content": "x"}] * 101}
    )
    assert too_many.status_code == 422 and "messages" in too_many.json()["error"]["message"]
    missing = client.get("/api/v1/sessions/never-made")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "NOT_FOUND"
    empty = client.post("/api/v1/sessions", json={"session_id": "empty"})
    assert empty.status_code == 200
    nothing = ok(client.post("/api/v1/sessions/empty/commit"))  # as OpenViking: skipped, no task
    assert (nothing["status"], nothing["task_id"], nothing["reason"]) == ("skipped", None, "no_messages")
    assert nothing["archived"] is False and nothing["archive_uri"] is None
    never = client.post("/api/v1/sessions/never-made/commit")
    assert never.status_code == 404 and never.json()["error"]["code"] == "NOT_FOUND"
    assert client.get("/api/v1/sessions/never-made").status_code == 404  # nothing was made


def _tree(root: Path) -> set[str]:
    out = set()
    for folder, _dirs, files in os.walk(root):
        for name in files:
            out.add(os.path.relpath(os.path.join(folder, name), root))
    return out


@pytest.mark.parametrize("hostile", ["../escape", "a\x00b", "x" * 300, "con", "..", "a/b", ".hidden"])
def test_hostile_session_ids_are_refused(served: tuple[httpx.Client, Path], hostile: str) -> None:
    client, root = served
    before = {p for p in _tree(root.parent) if "/sessions/" not in f"/{p}"}
    response = client.post("/api/v1/sessions", json={"session_id": hostile})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "INVALID_ARGUMENT"
    assert "session_id" in response.json()["error"]["message"]
    if "/" not in hostile and hostile not in ("..",):
        by_path = client.post(
            f"/api/v1/sessions/{quote(hostile, safe='')}/messages", json={"role": "user", "content": "x"}
        )
        assert by_path.status_code == 400, by_path.text
    after = {p for p in _tree(root.parent) if "/sessions/" not in f"/{p}"}
    assert {p for p in after - before if not p.startswith(("ws/.ovtui", "ws/runs", "ws/history"))} == set()


def test_memory_policy_and_peers(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    policy = {
        "self": {"enabled": True},
        "peer": {"enabled": False},
        "memory_types": ["preferences", "profile"],
    }
    ok(client.post("/api/v1/sessions", json={"session_id": "p1", "memory_policy": policy}))
    messages = [
        {"role": "user", "content": "I prefer aisle seats.", "peer_id": "bob"},
        {"role": "user", "content": "My name is Carla. I always want email receipts."},
        *CONVERSATION[1:],
    ]
    ok(client.post("/api/v1/sessions/p1/messages/batch", json={"messages": messages}))
    task = commit_and_wait(client, "p1")
    assert task["status"] == "completed", task
    # bob's preference is dropped (peers off); entities and cases are not whitelisted
    assert task["result"]["memories_extracted"] == {"profile": 1, "preferences": 1}
    [record] = task["result"]["history_ids"]  # no case: no training, only the user memories
    written = MemoryDiff.model_validate_json((root / f"history/{record}/memory_diff.json").read_text())
    kinds = {op.memory_type for op in written.operations.adds}
    assert kinds == {"profile", "preferences"}
    assert not list(root.glob("memories/preferences/*/aisle_seats.md"))  # bob's: peers are off
    assert not (root / "peers").exists()

    ok(
        client.post(
            "/api/v1/sessions",
            json={"session_id": "p2", "memory_policy": {"peer": {"allowed_peer_ids": ["bob"]}}},
        )
    )
    peers = [
        {"role": "user", "content": "I prefer aisle seats.", "peer_id": "bob"},
        {"role": "user", "content": "I prefer trains.", "peer_id": "eve"},
    ]
    ok(client.post("/api/v1/sessions/p2/messages/batch", json={"messages": peers}))
    task = commit_and_wait(client, "p2")
    assert task["result"]["memories_extracted"] == {"preferences": 1}  # bob's only: eve is not allowed
    bad_peer = client.post(
        "/api/v1/sessions/p2/messages", json={"role": "user", "content": "x", "peer_id": "../b"}
    )
    assert bad_peer.status_code == 422 and "peer_id" in bad_peer.json()["error"]["message"]


def test_failing_commit_keeps_the_archive_and_writes_nothing(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    history_before = set((root / "history").iterdir()) if (root / "history").exists() else set()
    garbage = {"role": "user", "content": "[OpenViking Training CaseSpec]\n{not json"}
    ok(client.post("/api/v1/sessions/broken/messages", json=garbage))
    task = commit_and_wait(client, "broken")
    assert task["status"] == "failed" and "CaseSpec" in task["error"], task
    archive = root / "sessions/broken/history/archive_001"
    assert (archive / "messages.jsonl").is_file()
    assert not (archive / "memory_diff.json").exists()
    assert (set((root / "history").iterdir()) if (root / "history").exists() else set()) == history_before


def test_concurrent_commits_all_complete(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    ids = [f"c{i}" for i in range(6)]
    for session_id in ids:
        ok(client.post(f"/api/v1/sessions/{session_id}/messages/batch", json={"messages": CONVERSATION}))
    with ThreadPoolExecutor(len(ids)) as pool:
        tasks = list(pool.map(lambda s: commit_and_wait(client, s), ids))
    assert [t["status"] for t in tasks] == ["completed"] * len(ids), tasks
    for session_id in ids:
        assert (root / f"sessions/{session_id}/history/archive_001/memory_diff.json").is_file()
    assert all(t["result"]["memories_extracted"]["cases"] == 1 for t in tasks)
