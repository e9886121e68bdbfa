"""Peers through the real session API (seed 004 §3.4): what a peer says about themself goes to the
peer's own space (``peers/<peer_id>/…``), the user's own memories to the user's, cases always to
the user's; the session's MemoryPolicy skips (and reports) peers it does not allow; hostile peer
ids are refused before anything is written; the peer files are History records like any other,
shown with their URI and reverted with the commit's record."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from session_support import CONVERSATION, commit_and_wait, ok, served_sample_workspace

from ovtui.app.views.diff_model import record_sections
from ovtui.cli.main import main as cli_main
from ovtui.memory.history import HistoryStore
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.memory.types import default_registry
from ovtui.plugins.session_extraction import ExtractedMemory, Extraction
from ovtui.protocols.sessions import MemoryPolicy
from ovtui.sessions.peers import PEER_INVALID, PEER_NOT_ALLOWED, PEERS_OFF, apply_policy
from ovtui.storage.paths import WorkspacePaths

PREFIX = "viking://user/default/"
ALICE = {"role": "user", "content": "My name is Alice Moreau. I prefer trains.", "peer_id": "alice"}
BOB = {"role": "user", "content": "My name is Bob. I prefer ferries.", "peer_id": "bob"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    with served_sample_workspace(tmp_path_factory.mktemp("peers") / "ws") as served:
        yield served


def committed(client: httpx.Client, session_id: str, messages: list[dict[str, Any]], **create: Any) -> Any:
    ok(client.post("/api/v1/sessions", json={"session_id": session_id, **create}))
    ok(client.post(f"/api/v1/sessions/{session_id}/messages/batch", json={"messages": messages}))
    task = commit_and_wait(client, session_id)
    assert task["status"] == "completed", task
    return task["result"]


def files(root: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(folder, name), root)
        for folder, _dirs, names in os.walk(root)
        for name in names
    }


def test_a_peer_s_memories_go_to_the_peer_s_space_and_revert_with_the_commit(
    served: tuple[httpx.Client, Path],
) -> None:
    client, root = served
    result = committed(client, "with-alice", [*CONVERSATION, ALICE])
    alice = root / "peers/alice/memories"
    # alice's profile and preference are hers; the user's own stay in memories/
    assert "My name is Alice Moreau" in (alice / "profile.md").read_text()
    assert "I prefer trains" in (alice / "preferences/alice/trains.md").read_text()
    own_profile = (root / "memories/profile.md").read_text()
    assert "Ana Ruiz" in own_profile and "Alice" not in own_profile
    assert not (root / "memories/preferences/default/trains.md").exists()
    assert any("window seats" in p.read_text() for p in (root / "memories/preferences/default").glob("*.md"))
    # the case (cases are not peer_enabled) and the entities are the user's own
    assert len(list((root / "memories/cases").glob("*.md"))) == 1
    assert sorted(p.relative_to(alice).as_posix() for p in alice.rglob("*.md")) == [
        "preferences/alice/trains.md",
        "profile.md",
    ]
    # the task and the archive's memory_diff.json report it
    assert result["peers"] == {"alice": {"memories": 2, "files_written": 2}}
    assert result["peer_memories_skipped"] == []
    archive = root / "sessions/with-alice/history/archive_001"
    diff = MemoryDiff.model_validate_json((archive / "memory_diff.json").read_text())
    assert diff.metadata["peers"] == result["peers"]
    peer_uris = {
        f"{PREFIX}peers/alice/memories/profile.md",
        f"{PREFIX}peers/alice/memories/preferences/alice/trains.md",
    }
    assert peer_uris <= set(diff.operations.uris())

    # the History record holds the peer files by URI, with their type; History's field diff and
    # `ovtui history show` name them
    history = HistoryStore(WorkspacePaths(root))
    [record_id] = [r for r in result["history_ids"] if history.get(r).kind == "session_commit"]
    record = history.get(record_id)
    assert {op.uri: op.memory_type for op in record.operations.adds if op.uri in peer_uris} == {
        f"{PREFIX}peers/alice/memories/profile.md": "profile",
        f"{PREFIX}peers/alice/memories/preferences/alice/trains.md": "preferences",
    }
    sections = record_sections(record, lambda uri: (uri or "").removeprefix(PREFIX))
    profile = next(s for s in sections if s.title == "+ peers/alice/memories/profile.md")
    assert any(c.name == "content" and "Alice Moreau" in (c.after or "") for c in profile.changes)

    # a second commit merges into alice's file (compare-and-swap against what the first wrote)
    more = {"role": "user", "content": "I live in Lyon.", "peer_id": "alice"}
    again = committed(client, "alice-again", [more])
    assert again["peers"] == {"alice": {"memories": 1, "files_written": 1}}
    [update_id] = again["history_ids"]
    [update] = history.get(update_id).operations.updates
    assert update.uri == f"{PREFIX}peers/alice/memories/profile.md"
    assert "I live in Lyon" in (alice / "profile.md").read_text()

    # revert: newest first; the peer files go with the commit's record
    assert cli_main(["revert", update_id, "--workspace", str(root)]) == 0
    assert "Lyon" not in (alice / "profile.md").read_text()
    assert cli_main(["revert", record_id, "--workspace", str(root)]) == 0
    assert not (alice / "profile.md").exists() and not (alice / "preferences/alice/trains.md").exists()
    assert not (root / "memories/profile.md").exists()


def test_history_show_names_the_peer_file(
    served: tuple[httpx.Client, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    client, root = served
    result = committed(
        client, "carla-only", [{"role": "user", "content": "I prefer tea.", "peer_id": "carla"}]
    )
    [record_id] = result["history_ids"]
    assert cli_main(["history", "show", record_id, "-w", str(root)]) == 0
    shown = capsys.readouterr().out
    assert "+++ b/peers/carla/memories/preferences/carla/tea.md" in shown and "I prefer tea" in shown


def test_peers_the_policy_does_not_allow_are_skipped_and_reported(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    policy = {"peer": {"enabled": True, "allowed_peer_ids": ["dora"]}}
    dora = {"role": "user", "content": "I prefer buses.", "peer_id": "dora"}
    result = committed(client, "allow-dora", [dora, BOB], memory_policy=policy)
    assert (root / "peers/dora/memories/preferences/dora/buses.md").is_file()
    assert not (root / "peers/bob").exists()
    assert result["peers"] == {"dora": {"memories": 1, "files_written": 1}}
    assert result["peer_memories_skipped"] == [{"peer_id": "bob", "memories": 2, "reason": PEER_NOT_ALLOWED}]
    diff = json.loads((root / "sessions/allow-dora/history/archive_001/memory_diff.json").read_text())
    assert diff["metadata"]["peer_memories_skipped"] == result["peer_memories_skipped"]
    # and as OpenViking lists a refusal: one skipped operation per memory, with its reason code
    reason = "Target peer is outside the allowed memory scope"
    assert sorted((s["memory_type"], s["reason_code"], s["reason"]) for s in diff["skipped_operations"]) == [
        ("preferences", "peer_not_allowed", reason),
        ("profile", "peer_not_allowed", reason),
    ]
    assert diff["summary"]["total_skipped"] == 2


def test_peer_memories_off_writes_no_peer_file(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    before = {f for f in files(root) if f.startswith("peers/")}
    own = {"role": "user", "content": "I always want paper tickets."}
    result = committed(client, "peers-off", [BOB, own], memory_policy={"peer": {"enabled": False}})
    assert {f for f in files(root) if f.startswith("peers/")} == before
    assert result["peers"] == {}
    assert result["peer_memories_skipped"] == [{"peer_id": "bob", "memories": 2, "reason": PEERS_OFF}]
    assert any("paper tickets" in p.read_text() for p in (root / "memories/preferences/default").glob("*.md"))


@pytest.mark.parametrize("hostile", ["../x", "a\x00b", "x" * 300, "con", ".hidden", "a/b", "peers/../.."])
def test_hostile_peer_ids_are_refused_and_nothing_is_written(
    served: tuple[httpx.Client, Path], hostile: str
) -> None:
    client, root = served
    client.get("/api/v1/sessions/hostile", params={"auto_create": True}).raise_for_status()
    before = files(root.parent)
    count = ok(client.get("/api/v1/sessions/hostile"))["message_count"]
    message = {"role": "user", "content": "My name is Mallory.", "peer_id": hostile}
    one = client.post("/api/v1/sessions/hostile/messages", json=message)
    batch = client.post("/api/v1/sessions/hostile/messages/batch", json={"messages": [ALICE, message]})
    policy = client.post(
        "/api/v1/sessions",
        json={"session_id": "hostile-policy", "memory_policy": {"peer": {"allowed_peer_ids": [hostile]}}},
    )
    for response in (one, batch, policy):
        assert response.status_code in (400, 422), response.text
        assert response.json()["status"] == "error" and "peer_id" in response.json()["error"]["message"]
    assert ok(client.get("/api/v1/sessions/hostile"))["message_count"] == count
    assert files(root.parent) == before


def test_routing_of_extracted_memories() -> None:
    """What a stored conversation may hold that the API would refuse (a hand-edited messages.jsonl,
    a model's answer): an invalid peer id is skipped and reported escaped; a type that is not
    peer_enabled ignores the peer."""
    memories = [
        ExtractedMemory("preferences", "tea", {"content": "- tea"}, "../x\x00"),
        ExtractedMemory("cases", "a_case", {"content": "- case"}, "alice"),
        ExtractedMemory("profile", None, {"content": "- Alice"}, "alice"),
        ExtractedMemory("profile", None, {"content": "- me"}),
    ]
    kept, report = apply_policy(Extraction(memories=memories), MemoryPolicy(), default_registry())
    assert [(m.memory_type, m.peer_id) for m in kept.memories] == [
        ("cases", None),
        ("profile", "alice"),
        ("profile", None),
    ]
    assert report.routed == {"alice": 1}
    assert report.skipped_list() == [{"peer_id": "'../x\\x00'", "memories": 1, "reason": PEER_INVALID}]
    no_self = MemoryPolicy.model_validate({"self": {"enabled": False}})
    kept, report = apply_policy(Extraction(memories=memories), no_self, default_registry())
    assert [(m.memory_type, m.peer_id) for m in kept.memories] == [("profile", "alice")]
