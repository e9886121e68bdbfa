"""An agent's writes and deletes on a real ``ovtui serve`` subprocess, in OpenViking 0.5.2's shapes:
``POST /api/v1/content/write`` (create / replace / append; what is written is found and read back,
and recorded in History as a ``write`` a revert undoes), ``DELETE /api/v1/fs`` (gone from find and
read, its text kept in the record); both refused for a path outside the declared memory types,
another user's space or ovtui's bookkeeping, and on a full disk (one line, nothing half-written);
parked for Review with ``[review] agent_writes = "wait"``. Also the routes a client probes:
``/health``'s ``auth_mode``, ``system/status``, the root listing and OpenViking's short URIs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from retrieval_support import compact_ok, error_of, full_ok, listing_ok, served
from workspace_support import build_sample_workspace

from ovtui.memory.history import HistoryStore
from ovtui.storage.faults import FAULT_ENV
from ovtui.storage.paths import WorkspacePaths
from ovtui.wiring.workspace import Workspace

HERMES = {"X-OpenViking-Actor-Peer": "hermes"}
PEER_PREFS = "viking://user/peers/hermes/memories/preferences"  # the short form Hermes writes
FULL_PEER_PREFS = "viking://user/default/peers/hermes/memories/preferences"
WINDOW = "The user always books a window seat on long flights."


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample_workspace(tmp_path_factory.mktemp("writes") / "ws")


@pytest.fixture(scope="module")
def client(workspace: Path) -> Iterator[httpx.Client]:
    with served(workspace) as client:
        yield client


def write(client: httpx.Client, uri: str, content: str, mode: str = "create") -> httpx.Response:
    return client.post(
        "/api/v1/content/write", json={"uri": uri, "content": content, "mode": mode}, headers=HERMES
    )


def history_kinds(root: Path) -> list[str]:
    return [entry.kind for entry in HistoryStore(WorkspacePaths(root)).entries().values()]


def test_a_remembered_fact_is_found_read_and_recorded(client: httpx.Client, workspace: Path) -> None:
    result = compact_ok(write(client, f"{PEER_PREFS}/mem_seat01.md", WINDOW))
    uri = f"{FULL_PEER_PREFS}/mem_seat01.md"
    assert result["uri"] == uri and result["created"] is True and result["mode"] == "create"
    assert result["written_bytes"] == len(WINDOW.encode()) and result["context_type"] == "memory"
    assert result["root_uri"] == FULL_PEER_PREFS and result["history_id"]
    on_disk = workspace / "peers/hermes/memories/preferences/mem_seat01.md"
    assert on_disk.read_text().startswith(WINDOW)
    found = compact_ok(
        client.post("/api/v1/search/find", json={"query": "window seat long flights"}, headers=HERMES)
    )
    hit = next(h for h in found["memories"] if h["uri"] == uri)
    assert hit["category"] == "preferences"
    read = full_ok(client.get("/api/v1/content/read", params={"uri": uri}, headers=HERMES))
    assert read.strip() == WINDOW
    record = HistoryStore(WorkspacePaths(workspace)).get(result["history_id"])
    assert record.kind == "write" and [o.uri for o in record.operations.adds] == [uri]


def test_replace_and_append_keep_the_file_one_memory(client: httpx.Client) -> None:
    uri = f"{PEER_PREFS}/mem_meal02.md"
    compact_ok(write(client, uri, "The user eats vegetarian meals."))
    appended = compact_ok(write(client, uri, "\nNo nuts, please.", "append"))
    assert appended["created"] is False and appended["mode"] == "append"
    text = full_ok(client.get("/api/v1/content/read", params={"uri": uri}, headers=HERMES))
    assert text.strip() == "The user eats vegetarian meals.\nNo nuts, please."
    compact_ok(write(client, uri, "The user eats vegan meals.", "replace"))
    text = full_ok(client.get("/api/v1/content/read", params={"uri": uri}, headers=HERMES))
    assert text.strip() == "The user eats vegan meals."
    again = error_of(write(client, uri, "twice"), 409, "ALREADY_EXISTS")
    assert "already exists" in again["message"]


@pytest.mark.parametrize(
    ("uri", "status", "code"),
    [
        ("viking://user/memories/patterns/mem_x.md", 400, "INVALID_ARGUMENT"),  # no such memory type
        ("viking://user/default/ovtui.toml", 403, "PERMISSION_DENIED"),  # ovtui's bookkeeping
        ("viking://user/bob/memories/profile.md", 403, "PERMISSION_DENIED"),  # another user's space
        ("viking://user/peers/mallory/memories/profile.md", 403, "PERMISSION_DENIED"),  # a peer unseen
        ("viking://user/memories/preferences/../../ovtui.toml", 400, "INVALID_URI"),
    ],
)
def test_a_write_outside_the_rule_is_refused_and_writes_nothing(
    client: httpx.Client, workspace: Path, uri: str, status: int, code: str
) -> None:
    before = history_kinds(workspace)
    error = error_of(write(client, uri, "x"), status, code)
    assert "\n" not in error["message"]
    assert history_kinds(workspace) == before
    assert not (workspace / "memories/patterns").exists()


def test_another_user_named_by_the_trusted_header_is_refused(client: httpx.Client) -> None:
    bob = {**HERMES, "X-OpenViking-User": "bob", "X-OpenViking-Account": "default"}
    answer = client.post(
        "/api/v1/content/write",
        json={"uri": "viking://user/memories/profile.md", "content": "My name is Bob."},
        headers=bob,
    )
    error = error_of(answer, 403, "PERMISSION_DENIED")
    assert "'bob'" in error["message"] and "'default'" in error["message"]
    same = {**HERMES, "X-OpenViking-User": "default"}
    status = full_ok(client.get("/api/v1/system/status", headers=same))
    assert status == {"initialized": True, "user": "default"}


def test_forget_deletes_and_the_record_keeps_the_text(client: httpx.Client, workspace: Path) -> None:
    uri = f"{PEER_PREFS}/mem_gone03.md"
    compact_ok(write(client, uri, "The user dislikes aisle seats."))
    gone = full_ok(client.delete("/api/v1/fs", params={"uri": uri, "recursive": False}, headers=HERMES))
    full = f"{FULL_PEER_PREFS}/mem_gone03.md"
    assert gone["uri"] == full and gone["history_id"]
    error_of(client.get("/api/v1/content/read", params={"uri": uri}, headers=HERMES), 404, "NOT_FOUND")
    found = compact_ok(client.post("/api/v1/search/find", json={"query": "aisle seats"}, headers=HERMES))
    assert full not in [h["uri"] for h in found["memories"]]
    record = HistoryStore(WorkspacePaths(workspace)).get(gone["history_id"])
    assert record.kind == "write"
    deleted = [(o.uri, o.deleted_content) for o in record.operations.deletes]
    assert deleted == [(full, deleted[0][1])] and deleted[0][1].startswith("The user dislikes")
    error_of(client.delete("/api/v1/fs", params={"uri": uri}, headers=HERMES), 404, "NOT_FOUND")
    sessions = {"uri": "viking://user/default/sessions"}
    error_of(client.delete("/api/v1/fs", params=sessions), 400, "INVALID_ARGUMENT")


def test_the_routes_a_client_probes(client: httpx.Client) -> None:
    health = client.get("/health").json()
    assert health["healthy"] is True and health["auth_mode"] == "dev"
    root, more = listing_ok(client.get("/api/v1/fs/ls", params={"uri": "viking://"}))
    assert [e["uri"] for e in root] == ["viking://user"] and root[0]["isDir"] and not more
    original = {"uri": "viking://user", "output": "original"}
    users, _ = listing_ok(client.get("/api/v1/fs/ls", params=original))
    assert [(e["uri"], e["name"]) for e in users] == [("viking://user/default", "default")]
    short, _ = listing_ok(client.get("/api/v1/fs/ls", params={"uri": "viking://user/memories", "simple": 1}))
    assert "viking://user/default/memories/experiences" in short
    alias, _ = listing_ok(client.get("/api/v1/fs/ls", params={"uri": "viking://~/memories", "simple": 1}))
    assert alias == short


def test_a_full_disk_refuses_the_write_in_one_line(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    with served(root, env={FAULT_ENV: f"ENOSPC:writes:{root}/peers/*"}) as client:
        answer = write(client, f"{PEER_PREFS}/mem_full04.md", WINDOW)
        error = error_of(answer, 507, "INSUFFICIENT_STORAGE")
        assert "No space left on device" in error["message"] and "\n" not in error["message"]
        assert str(root) not in error["message"]
        params = {"uri": f"{PEER_PREFS}/mem_full04.md"}
        read = client.get("/api/v1/content/read", params=params, headers=HERMES)
        error_of(read, 404, "NOT_FOUND")
    assert not list((root / "peers").rglob("*.md"))
    assert "write" not in history_kinds(root)


async def test_writes_wait_for_review_when_the_workspace_says_so(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace("[review]\n", '[review]\nagent_writes = "wait"\n', 1))
    assert 'agent_writes = "wait"' in config.read_text()
    with served(root) as client:
        result = compact_ok(write(client, f"{PEER_PREFS}/mem_wait05.md", WINDOW))
    assert result["pending_plan"] and result["history_id"] is None and result["content_updated"] is False
    assert not (root / "peers").exists()
    # A person approves it in Review: then it is written, as any plan is.
    workspace = Workspace(root)
    workspace.review.decide_all(result["pending_plan"], "approved", note="reviewed")
    applied = await workspace.review.apply_pending(result["pending_plan"])
    assert applied.written_uris == [f"{FULL_PEER_PREFS}/mem_wait05.md"] and not applied.errors
    assert (root / "peers/hermes/memories/preferences/mem_wait05.md").read_text().startswith(WINDOW)
