"""User memories of session commits: written through generic memory-type plans (profile, preferences,
entities, cases), merged per file across sessions, no-ops left out, recorded and revertible, batched
across concurrent commits, or parked for Review when configured."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from session_support import CONVERSATION
from workspace_support import build_sample_workspace

from ovtui.context import RunContext
from ovtui.memory.revert import revert
from ovtui.service import Workspace
from ovtui.sessions.commit import CommitOutcome, SessionCommitter
from ovtui.sessions.ingest import commit_messages
from ovtui.sessions.models import AddMessageRequest
from ovtui.sessions.store import SessionStore
from ovtui.workspace.history import HistoryStore


def workspace(tmp: Path, extra: str = "") -> Workspace:
    root = build_sample_workspace(tmp / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"') + extra)
    return Workspace(root)


async def commit_all(ws: Workspace, conversations: dict[str, list[dict[str, Any]]]) -> list[CommitOutcome]:
    sessions = SessionStore(ws.paths)
    committer = SessionCommitter(ws, sessions, RunContext())
    try:
        return list(
            await asyncio.gather(
                *(
                    commit_messages(
                        committer,
                        session_id,
                        [
                            AddMessageRequest.model_validate(m).to_stored(sessions.next_message_id())
                            for m in messages
                        ],
                    )
                    for session_id, messages in conversations.items()
                )
            )
        )
    finally:
        await committer.close()


def test_commit_writes_user_memories_recorded_and_revertible(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    [outcome] = asyncio.run(commit_all(ws, {"s1": CONVERSATION}))
    root = ws.root
    profile = (root / "memories/profile.md").read_text()
    assert "my name is Ana Ruiz" in profile
    [preference] = (root / "memories/preferences").glob("*.md")
    assert "I prefer window seats" in preference.read_text()
    assert "order_id" in (root / "memories/entities/order_id/1234.md").read_text()
    assert len(list((root / "memories/cases").glob("*.md"))) == 1
    history = HistoryStore(ws.paths)
    records = {rid: history.get(rid) for rid in outcome.history_ids}
    [user_record] = [rid for rid, r in records.items() if r.kind == "session_commit"]
    added = {op.uri.split("/memories/", 1)[1] for op in records[user_record].operations.adds}
    assert {"profile.md", "entities/order_id/1234.md"} <= added
    # the archive's memory_diff lists the user memories and the training together
    diff_uris = set(outcome.diff.operations.uris())
    assert {op.uri for op in records[user_record].operations.adds} <= diff_uris
    assert any("/experiences/" in uri for uri in diff_uris)
    revert(ws.store, user_record)
    assert not (root / "memories/profile.md").exists()


def test_repeated_facts_are_no_ops_and_new_lines_merge(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    asyncio.run(commit_all(ws, {"s1": CONVERSATION}))
    [again] = asyncio.run(commit_all(ws, {"s2": CONVERSATION}))
    history = HistoryStore(ws.paths)
    records = [history.get(rid) for rid in again.history_ids]
    [user_record] = [r for r in records if r.kind == "session_commit"]
    # the same facts again change no file; only the conversation's own case is new
    assert not user_record.operations.updates
    assert {op.memory_type for op in user_record.operations.adds} == {"cases"}
    more = [{"role": "user", "content": "I live in Porto. My name is Ana Ruiz."}]
    [merged] = asyncio.run(commit_all(ws, {"s3": more}))
    [record] = [history.get(rid) for rid in merged.history_ids]
    [update] = record.operations.updates
    assert update.uri.endswith("/memories/profile.md")
    profile = (ws.root / "memories/profile.md").read_text()
    assert profile.count("my name is Ana Ruiz") == 1 and "I live in Porto" in profile


def test_concurrent_commits_account_for_every_memory(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    people = ["Ana", "Bruno", "Carla", "Dario", "Eva", "Filipe"]
    conversations = {
        f"c{i}": [{"role": "user", "content": f"My name is {name}. I always want email receipts {i}."}]
        for i, name in enumerate(people)
    }
    outcomes = asyncio.run(commit_all(ws, conversations))
    profile = (ws.root / "memories/profile.md").read_text()
    assert all(f"My name is {name}" in profile for name in people)
    preferences = "".join(p.read_text() for p in (ws.root / "memories/preferences").glob("*.md"))
    assert all(f"receipts {i}" in preferences for i in range(len(people)))
    records = {rid for o in outcomes for rid in o.history_ids}
    assert 1 <= len(records) < len(people)  # batched: fewer records than commits, none lost
    assert all(not o.errors for o in outcomes)


def test_review_switch_parks_user_memories(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "\n[sessions]\nreview_user_memories = true\n")
    peer_line = {"role": "user", "content": "I prefer trains.", "peer_id": "bob"}
    [outcome] = asyncio.run(commit_all(ws, {"s1": [*CONVERSATION, peer_line]}))
    assert not (ws.root / "memories/profile.md").exists()
    assert outcome.peers.routed == {"bob": 1}
    [plan_id] = [p for p in outcome.pending_plans if ws.pending.is_waiting(p)]
    pending = ws.pending.get(plan_id)
    # bob's preference waits too, aimed at bob's space; nothing of bob's is written before Review
    [bobs] = [item for item in pending.plan.items if item.peer_id == "bob"]
    assert bobs.memory_type == "preferences" and not (ws.root / "peers").exists()
    assert {item.memory_type for item in pending.plan.items} == {
        "profile",
        "preferences",
        "entities",
        "cases",
    }
    assert outcome.diff.metadata["pending_plans"] == outcome.pending_plans
    # approved in Review, bob's preference is written to bob's space, the user's to the user's
    ws.pending.decide_all(plan_id, "approved")
    applied = asyncio.run(ws.apply_pending(plan_id))
    assert not applied.item_errors, applied.item_errors
    assert (ws.root / "peers/bob/memories/preferences/trains.md").is_file()
    assert not (ws.root / "memories/preferences/trains.md").exists()
    assert (ws.root / "memories/profile.md").is_file()
