"""Commit semantics as OpenViking 0.5.2's (checked against a live 0.5.2 server): the keep window,
automatic commits after a policy's thresholds, pending tokens counted its way, the session's and
the task's fields, every role and part an OpenViking client sends; and a failed commit submitted
again through its archive."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from session_support import CONVERSATION, ok, served_sample_workspace


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    with served_sample_workspace(tmp_path_factory.mktemp("semantics") / "ws") as served:
        yield served


def _say(text: str, role: str = "user") -> dict[str, Any]:
    return {"role": role, "content": text}


def _finished(client: httpx.Client, task_id: str) -> dict[str, Any]:
    task: dict[str, Any] = ok(client.get(f"/api/v1/tasks/{task_id}", params={"wait": 30}))
    assert task["status"] in ("completed", "failed"), task
    return task


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_keep_recent_count_keeps_the_newest_messages_live(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    said = [f"message {n}" for n in range(5)]
    ok(client.post("/api/v1/sessions/k1/messages/batch", json={"messages": [_say(t) for t in said]}))
    accepted = ok(client.post("/api/v1/sessions/k1/commit", json={"keep_recent_count": 2}))
    assert accepted["status"] == "accepted" and accepted["archive_uri"].endswith("/k1/history/archive_001")
    archived = _lines(root / "sessions/k1/history/archive_001/messages.jsonl")
    assert [m["parts"][0]["text"] for m in archived] == said[:3]
    live = [m["parts"][0]["text"] for m in _lines(root / "sessions/k1/messages.jsonl")]
    assert live == said[3:]
    session = ok(client.get("/api/v1/sessions/k1"))
    assert (session["message_count"], session["total_message_count"], session["commit_count"]) == (2, 5, 1)
    assert session["keep_recent_count"] == 2 and session["last_commit_at"]
    assert session["pending_tokens"] == 0  # what is live is inside the window: nothing pending
    _finished(client, accepted["task_id"])

    # all inside the window: skipped, the window remembered; then everything goes
    within = ok(client.post("/api/v1/sessions/k1/commit", json={"keep_recent_count": 5}))
    assert (within["status"], within["reason"], within["task_id"]) == (
        "skipped",
        "all_within_keep_window",
        None,
    )
    assert ok(client.get("/api/v1/sessions/k1"))["keep_recent_count"] == 5
    rest = ok(client.post("/api/v1/sessions/k1/commit"))
    assert rest["archive_uri"].endswith("/archive_002")
    assert len(_lines(root / "sessions/k1/history/archive_002/messages.jsonl")) == 2
    assert ok(client.get("/api/v1/sessions/k1"))["message_count"] == 0
    _finished(client, rest["task_id"])


def test_pending_tokens_count_as_openviking_counts_them(served: tuple[httpx.Client, Path]) -> None:
    client, _ = served
    tool = {
        "type": "tool",
        "tool_id": "t1",
        "tool_name": "lookup",
        "tool_input": {"q": "x"},
        "tool_output": "result",
    }
    messages = [
        _say("hello there"),
        {"role": "assistant", "parts": [{"type": "text", "text": "hi"}, tool]},
        _say("sys", "system"),
        _say("dev", "developer"),
        _say("toolrole", "tool"),
    ]
    added = ok(client.post("/api/v1/sessions/tok/messages/batch", json={"messages": messages}))
    assert added["pending_tokens"] == 14  # what OpenViking 0.5.2 answered for these five: 3+7+1+1+2
    assert ok(client.get("/api/v1/sessions/tok"))["pending_tokens"] == 14
    wide = ok(client.post("/api/v1/sessions/tok2/messages", json=_say("日本語のテキスト")))
    assert wide["pending_tokens"] == 12  # 8 wide characters count 6 quarter-tokens each


def test_the_context_budget_counts_tokens_as_pending_tokens_do(served: tuple[httpx.Client, Path]) -> None:
    client, _ = served
    tool = {"type": "tool", "tool_id": "t1", "tool_name": "lookup", "tool_input": {"q": "x"}}
    messages = [_say("ｆｕｌｌ"), {"role": "assistant", "parts": [{"type": "text", "text": "hi"}, tool]}]
    added = ok(client.post("/api/v1/sessions/ctx1/messages/batch", json={"messages": messages}))
    assert added["pending_tokens"] == 11  # full-width forms, 1.5 tokens each: 6; the reply, joined: 5
    fits = ok(client.get("/api/v1/sessions/ctx1/context", params={"token_budget": 11}))
    assert len(fits["messages"]) == 2 and fits["stats"]["activeTokens"] == fits["estimatedTokens"] == 11
    # 0.5.2's answer one short: the question cut to "ｆｕ" and the marker (4), the reply whole (5).
    short = ok(client.get("/api/v1/sessions/ctx1/context", params={"token_budget": 10}))
    assert [m["parts"][0]["text"] for m in short["messages"]] == ["ｆｕ\n…\n", "hi"]
    assert short["stats"]["activeTokens"] == 9


def test_a_policy_commits_the_session_after_its_message_threshold(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    policy = {"message_count_threshold": 2, "keep_recent_count": 1}
    created = ok(client.post("/api/v1/sessions", json={"session_id": "a1", "auto_commit_policy": policy}))
    assert created["auto_commit_policy"] == {
        "pending_token_threshold": 150_000,
        "message_count_threshold": 2,
        "idle_timeout_seconds": 86_400,
        "keep_recent_count": 1,
        "min_commit_interval_seconds": 0,
    }
    for n in (1, 2):
        added = ok(client.post("/api/v1/sessions/a1/messages", json=_say(f"first {n}")))
        assert "auto_commit" not in added  # not past the threshold: strictly greater
    third = ok(client.post("/api/v1/sessions/a1/messages", json=_say("first 3")))
    assert third["message_count"] == 3
    task = _finished(client, third["auto_commit"]["task_id"])
    assert task["status"] == "completed", task
    session = ok(client.get("/api/v1/sessions/a1"))
    assert session["message_count"] == 1 and session["commit_count"] == 1
    assert session["last_auto_commit_at"] and session["last_auto_commit_at"] == session["last_commit_at"]
    assert len(_lines(root / "sessions/a1/history/archive_001/messages.jsonl")) == 2

    # turned off: no more automatic commits
    off = ok(client.patch("/api/v1/sessions/a1/config", json={"auto_commit_policy": None}))
    assert off["auto_commit_policy"] is None
    for n in range(4):
        assert "auto_commit" not in ok(client.post("/api/v1/sessions/a1/messages", json=_say(f"later {n}")))
    assert ok(client.get("/api/v1/sessions/a1"))["commit_count"] == 1


def test_a_policy_commits_after_its_token_threshold_and_waits_its_interval(
    served: tuple[httpx.Client, Path],
) -> None:
    client, _ = served
    ok(client.post("/api/v1/sessions", json={"session_id": "a2"}))
    policy = {"pending_token_threshold": 10, "message_count_threshold": 0, "min_commit_interval_seconds": 600}
    set_ = ok(client.patch("/api/v1/sessions/a2/config", json={"auto_commit_policy": policy}))
    assert set_["auto_commit_policy"]["pending_token_threshold"] == 10
    short = ok(client.post("/api/v1/sessions/a2/messages", json=_say("x" * 40)))  # 10 tokens: not past
    assert short["pending_tokens"] == 10 and "auto_commit" not in short
    longer = ok(client.post("/api/v1/sessions/a2/messages", json=_say("y" * 8)))  # 12 pending
    _finished(client, longer["auto_commit"]["task_id"])
    again = ok(client.post("/api/v1/sessions/a2/messages", json=_say("z" * 100)))  # inside the interval
    assert again["pending_tokens"] == 25 and "auto_commit" not in again


def test_a_policy_that_is_wrong_is_named(served: tuple[httpx.Client, Path]) -> None:
    client, _ = served
    cases = [
        ({"message_count_threshold": 2, "typo": 1}, "typo"),
        ({"message_count_threshold": None}, "auto_commit_policy: null"),
        ({"idle_timeout_seconds": 10}, "idle_timeout_seconds"),
        ({"keep_recent_count": "many"}, "keep_recent_count"),
    ]
    for policy, named in cases:
        response = client.post(
            "/api/v1/sessions", json={"session_id": "bad-policy", "auto_commit_policy": policy}
        )
        assert response.status_code == 422, (policy, response.text)
        assert named in response.json()["error"]["message"], response.text
    assert client.get("/api/v1/sessions/bad-policy").status_code == 404
    clamped = {"message_count_threshold": 5000, "pending_token_threshold": -5}
    made = ok(client.post("/api/v1/sessions", json={"session_id": "clamped", "auto_commit_policy": clamped}))
    assert made["auto_commit_policy"]["message_count_threshold"] == 1000  # OpenViking's bounds
    assert made["auto_commit_policy"]["pending_token_threshold"] == 0
    missing = client.patch("/api/v1/sessions/never-made/config", json={"auto_commit_policy": None})
    assert missing.status_code == 404
    turn_budget = client.post("/api/v1/sessions/clamped/commit", json={"retention_mode": "turn_budget"})
    assert turn_budget.status_code == 422 and "retention_mode" in turn_budget.json()["error"]["message"]


def test_every_role_and_part_is_stored_and_extraction_says_what_it_left_out(
    served: tuple[httpx.Client, Path],
) -> None:
    client, root = served
    messages = [
        _say("You are a help desk agent.", "developer"),
        _say("Be brief.", "system"),
        *CONVERSATION[:1],
        {
            "role": "user",
            "parts": [
                {"type": "text", "text": "Here is the receipt."},
                {"type": "image_url", "image_url": {"url": "https://example.com/r.png", "detail": "low"}},
                {"type": "image_url", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ],
        },
        *CONVERSATION[1:],
        _say('{"status": "ok"}', "tool"),
    ]
    ok(client.post("/api/v1/sessions/parts/messages/batch", json={"messages": messages}))
    accepted = ok(client.post("/api/v1/sessions/parts/commit"))
    task = _finished(client, accepted["task_id"])
    assert task["status"] == "completed", task
    left_out = task["result"]["parts_not_extracted"]
    assert (left_out["context"], left_out["image_url"]) == (1, 2) and "text and tool" in left_out["reason"]
    assert task["result"]["memories_extracted"]["cases"] == 1  # the conversation was read as before
    stored = _lines(root / "sessions/parts/history/archive_001/messages.jsonl")
    assert [m["role"] for m in stored[:2]] == ["developer", "system"] and stored[-1]["role"] == "tool"
    images = [p for p in stored[3]["parts"] if p["type"] == "image_url"]
    assert images[0]["image_url"] == {"url": "https://example.com/r.png", "detail": "low"}
    assert images[1]["image_url"]["url"].startswith("data:image/png")
    [context] = [p for p in stored[4]["parts"] if p["type"] == "context"]
    assert context == {
        "type": "context",
        "uri": "viking://user/default/memories/x.md",
        "context_type": "memory",
        "abstract": "ignored",
    }
    # the session's totals add up what its commits extracted
    session = ok(client.get("/api/v1/sessions/parts"))
    extracted = task["result"]["memories_extracted"]
    assert session["memories_extracted"]["total"] == sum(extracted.values())
    assert set(session["llm_token_usage"]) >= {"prompt_tokens", "completion_tokens", "total_tokens"}
    empty = client.post(
        "/api/v1/sessions/parts/messages",
        json={"role": "user", "parts": [{"type": "image_url", "image_url": " "}]},
    )
    assert empty.status_code == 422 and "image_url" in empty.json()["error"]["message"]


def test_a_failed_commit_is_submitted_again_through_its_archive(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    garbage = {"role": "user", "content": "[OpenViking Training CaseSpec]\n{not json"}
    ok(client.post("/api/v1/sessions/again/messages", json=garbage))
    first = ok(client.post("/api/v1/sessions/again/commit"))
    assert _finished(client, first["task_id"])["status"] == "failed"
    route = "/api/v1/sessions/again/archives/archive_001/resubmit"
    second = ok(client.post(route))
    assert second["task_id"] != first["task_id"] and second["archive_uri"] == first["archive_uri"]
    assert _finished(client, second["task_id"])["status"] == "failed"  # still garbage, but tried again
    record = json.loads((root / "sessions/again/history/archive_001/commit.json").read_text())
    assert record["task_id"] == second["task_id"] and record["earlier_task_ids"] == [first["task_id"]]

    ok(client.post("/api/v1/sessions/fine/messages/batch", json={"messages": CONVERSATION}))
    done = ok(client.post("/api/v1/sessions/fine/commit"))
    assert _finished(client, done["task_id"])["status"] == "completed"
    refused = client.post("/api/v1/sessions/fine/archives/archive_001/resubmit")
    assert refused.status_code == 409 and "memory_diff.json" in refused.json()["error"]["message"]
    assert client.post("/api/v1/sessions/fine/archives/archive_009/resubmit").status_code == 404
    assert client.post("/api/v1/sessions/fine/archives/..%2Fx/resubmit").status_code in (400, 404)


def test_sessions_and_tasks_carry_the_fields_openviking_answers(served: tuple[httpx.Client, Path]) -> None:
    """The keys a live OpenViking 0.5.2 answered to its own SDK (create, get, list sessions; a
    commit's task), so a client written against it reads ovtui's answers the same way."""
    client, _ = served
    created = ok(client.post("/api/v1/sessions", json={"session_id": "shape"}))
    assert created["user"] == {"account_id": "default", "user_id": "default"}
    ok(client.post("/api/v1/sessions/shape/messages", json=CONVERSATION[0]))
    session = ok(client.get("/api/v1/sessions/shape"))
    assert (session["created_by_account_id"], session["created_by_user_id"]) == ("default", "default")
    assert session["user"] == created["user"]
    # turn-budget retention and the idle scanner, which ovtui has not: the values 0.5.2 answers when off
    retention = (
        "retention_mode",
        "keep_recent_turn_count",
        "retained_message_token_budget",
        "min_raw_tail_steps",
    )
    assert [session[k] for k in retention] == ["", 0, 0, 1] and session["last_idle_commit_accepted_at"] == ""
    assert session["embedding_token_usage"] == {"total_tokens": 0}
    [listed] = [s for s in ok(client.get("/api/v1/sessions")) if s["session_id"] == "shape"]
    assert listed["is_dir"] is True and listed["uri"].endswith("/sessions/shape")
    assert len(listed["mod_time"]) == len("2026-12-01T14:26:19Z") and listed["mod_time"].endswith("Z")

    task = _finished(client, ok(client.post("/api/v1/sessions/shape/commit"))["task_id"])
    result = task["result"]
    usage = result["token_usage"]
    assert set(usage["llm"]) == {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "cached_tokens",
        "reasoning_tokens",
    }
    assert usage["total"]["total_tokens"] == usage["llm"]["total_tokens"] == usage["total_tokens"]
    assert usage["embedding"] == {"total_tokens": 0}
    assert result["agent_evolution_enabled"] is True and result["agent_memory_skip_reason"] is None
    assert {"cases", "trajectories", "experiences", "preferences"} <= set(result["effective_memory_types"])
    extraction = result["memory_extraction"]
    diff = ok(client.get("/api/v1/content/read", params={"uri": result["memory_diff_uri"]}))
    assert extraction["skipped_operations"] == json.loads(diff)["skipped_operations"]
    assert extraction["skipped"] == len(extraction["skipped_operations"])
    # a policy without cases and trajectories trains nothing of the agent's: said as OpenViking says it
    policy = {"memory_policy": {"memory_types": ["preferences"]}}
    ok(client.post("/api/v1/sessions", json={"session_id": "narrow", **policy}))
    ok(client.post("/api/v1/sessions/narrow/messages", json=CONVERSATION[0]))
    narrow = _finished(client, ok(client.post("/api/v1/sessions/narrow/commit"))["task_id"])["result"]
    assert narrow["effective_memory_types"] == ["preferences"]
    assert narrow["agent_memory_skip_reason"] == "memory_types_filtered"
