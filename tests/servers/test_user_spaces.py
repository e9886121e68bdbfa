"""Several users in one workspace, through a real ``ovtui serve`` subprocess on 127.0.0.1: the
owner (``[workspace] user``) and a declared user (``[workspace] users``) each commit a session with
personal facts, naming themselves with ``X-OpenViking-User`` as an OpenViking client does; each
user's facts are written into that user's own space on disk, each finds only its own, and neither
can read the other's files. Names that are not user names, and users not declared, are refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from server_support import start_cli_server, stop
from session_support import approving_sample_workspace, commit_and_wait, ok

OWNER, OTHER = "alice", "bob"
FACTS = {
    OWNER: "Hi, my name is Alice Moreau. I prefer window seats. Please cancel order 1234.",
    OTHER: "Hi, my name is Bob Lindqvist. I prefer aisle seats. Please cancel order 5678.",
}


def conversation(user: str) -> list[dict[str, Any]]:
    order = "1234" if user == OWNER else "5678"
    return [
        {"role": "user", "content": FACTS[user]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool",
                    "tool_id": "c1",
                    "tool_name": "cancel_order",
                    "tool_input": {"order_id": order, "reason": "customer request"},
                    "tool_output": "cancelled",
                    "tool_status": "completed",
                }
            ],
        },
        {"role": "assistant", "content": f"Order {order} is cancelled."},
    ]


def as_user(url: str, user: str) -> httpx.Client:
    headers = {"X-OpenViking-Account": "acme", "X-OpenViking-User": user}
    return httpx.Client(base_url=url, timeout=60, headers=headers)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = approving_sample_workspace(tmp_path_factory.mktemp("users") / "ws")
    config = root / "ovtui.toml"
    config.write_text(
        config.read_text().replace('user = "default"', f'user = "{OWNER}"\nusers = ["{OTHER}"]')
    )
    proc, url = start_cli_server(["serve", str(root), "--port", "0"])
    try:
        for user in (OWNER, OTHER):
            with as_user(url, user) as client:
                ok(client.post("/api/v1/sessions", json={"session_id": "trip"}))  # one id, two users
                ok(client.post("/api/v1/sessions/trip/messages/batch", json={"messages": conversation(user)}))
                task = commit_and_wait(client, "trip")
                assert task["status"] == "completed", task
                assert task["result"]["memories_extracted"]["profile"] == 1, task
                assert task["result"]["archive_uri"].startswith(f"viking://user/{user}/sessions/trip/")
        yield url, root
    finally:
        stop(proc)


def test_each_user_s_facts_are_written_into_that_user_s_own_space(served: tuple[str, Path]) -> None:
    _, root = served
    alice = (root / "memories/profile.md").read_text()
    bob = (root / "users" / OTHER / "memories/profile.md").read_text()
    assert "Alice Moreau" in alice and "Bob" not in alice
    assert "Bob Lindqvist" in bob and "Alice" not in bob
    assert (root / "sessions/trip/history/archive_001/messages.jsonl").read_text().count("Alice") >= 1
    bob_archive = root / "users" / OTHER / "sessions/trip/history/archive_001/messages.jsonl"
    assert "Bob Lindqvist" in bob_archive.read_text() and "Alice" not in bob_archive.read_text()


@pytest.mark.parametrize(
    ("user", "own", "other"), [(OWNER, "Alice Moreau", "Bob"), (OTHER, "Bob Lindqvist", "Alice")]
)
def test_each_user_finds_only_its_own_facts(
    served: tuple[str, Path], user: str, own: str, other: str
) -> None:
    url, _ = served
    with as_user(url, user) as client:
        answer = client.post("/api/v1/search/find", json={"query": "name window aisle seats", "limit": 50})
        assert answer.status_code == 200 and answer.json()["status"] == "ok", answer.text
        found = answer.json()["result"]
        uris = [m["uri"] for m in found["memories"]]
        assert f"viking://user/{user}/memories/profile.md" in uris, uris
        assert all(u.startswith(f"viking://user/{user}/") for u in uris), uris
        profile = ok(
            client.get("/api/v1/content/read", params={"uri": f"viking://user/{user}/memories/profile.md"})
        )
        assert own in profile and other not in profile
        short = ok(client.get("/api/v1/content/read", params={"uri": "viking://user/memories/profile.md"}))
        assert short == profile  # the short form is the caller's own space


@pytest.mark.parametrize(("user", "theirs"), [(OWNER, OTHER), (OTHER, OWNER)])
def test_no_user_reads_or_lists_the_other_s_space(served: tuple[str, Path], user: str, theirs: str) -> None:
    url, _ = served
    with as_user(url, user) as client:
        for route, uri in (
            ("/api/v1/content/read", f"viking://user/{theirs}/memories/profile.md"),
            ("/api/v1/fs/ls", f"viking://user/{theirs}/memories"),
            (
                "/api/v1/content/read",
                f"viking://user/{theirs}/sessions/trip/history/archive_001/messages.jsonl",
            ),
        ):
            response = client.get(route, params={"uri": uri})
            assert response.status_code == 403, response.text
            assert response.json()["error"]["code"] == "PERMISSION_DENIED"
        # the owner's space holds the others' folders, and never serves them
        response = client.get(
            "/api/v1/content/read", params={"uri": f"viking://user/{OWNER}/users/{OTHER}/memories/profile.md"}
        )
        assert response.status_code == 403 and "Bob" not in response.text


@pytest.mark.parametrize("name", ["../x", "bob/../alice", ".hidden", "a" * 65, "bob\\x"])
def test_a_header_that_is_no_user_name_is_refused(served: tuple[str, Path], name: str) -> None:
    url, root = served
    with as_user(url, name) as client:
        response = client.post("/api/v1/sessions", json={"session_id": "x"})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"]["code"] == "INVALID_ARGUMENT" and "X-OpenViking-User" in body["error"]["message"]
    assert sorted(p.name for p in (root / "users").iterdir()) == [OTHER]


def test_a_user_not_declared_is_refused_naming_the_setting(served: tuple[str, Path]) -> None:
    url, root = served
    with as_user(url, "carol") as client:
        response = client.post("/api/v1/sessions", json={"session_id": "x"})
    assert response.status_code == 403
    message = response.json()["error"]["message"]
    assert "'carol'" in message and "[workspace] users" in message and "'bob'" in message
    assert not (root / "users" / "carol").exists()


def test_health_answers_whoever_is_named(served: tuple[str, Path]) -> None:
    url, _ = served
    with as_user(url, "../x") as client:
        assert client.get("/health").json()["healthy"] is True


def test_in_api_key_mode_the_key_admits_and_the_header_still_selects_the_space(tmp_path: Path) -> None:
    root = approving_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    config.write_text(
        config.read_text().replace('user = "default"', f'user = "{OWNER}"\nusers = ["{OTHER}"]')
    )
    args = ["serve", str(root), "--port", "0", "--api-key-env", "OVTUI_TEST_KEY"]
    proc, url = start_cli_server(args, env={"OVTUI_TEST_KEY": "k-123"})
    try:
        with as_user(url, OTHER) as client:
            refused = client.post("/api/v1/sessions", json={"session_id": "keyed"})
            assert refused.status_code == 401 and OTHER not in refused.text  # no key: no user learned
            client.headers["X-API-Key"] = "k-123"
            ok(client.post("/api/v1/sessions", json={"session_id": "keyed"}))
            assert ok(client.get("/api/v1/system/status"))["user"] == OTHER
            ok(client.post("/api/v1/sessions/keyed/messages/batch", json={"messages": conversation(OTHER)}))
            assert commit_and_wait(client, "keyed")["status"] == "completed"
        proc.terminate()
        said, _ = proc.communicate(timeout=30)
        # the server's log line for the commit names whose space it was
        assert f" user {OTHER}: commit keyed:archive_001: " in said, said
    finally:
        stop(proc)
    assert (root / "users" / OTHER / "sessions/keyed").is_dir() and not (root / "sessions/keyed").exists()


async def test_over_mcp_each_user_searches_and_reads_its_own_space_only(served: tuple[str, Path]) -> None:
    url, _ = served
    headers = {"X-OpenViking-User": OTHER}
    async with (
        httpx.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        found = await session.call_tool("search_memories", {"query": "name window aisle seats", "limit": 50})
        assert not found.is_error and found.structured_content is not None, found.content
        uris = [m["uri"] for m in found.structured_content["memories"]]
        assert f"viking://user/{OTHER}/memories/profile.md" in uris
        assert all(u.startswith(f"viking://user/{OTHER}/") for u in uris), uris
        theirs = await session.call_tool("read_memory", {"uri": f"viking://user/{OWNER}/memories/profile.md"})
        assert theirs.is_error and "Alice" not in str(theirs.content)
        assert "the space of user 'alice' is not this caller's (PERMISSION_DENIED)" in str(theirs.content)
