"""A message's turn fields (``turn_id``, ``message_kind``, ``source_message_ids``), as OpenViking
0.5.2 takes, stores and returns them, through the real session server.

Expected values are what a live OpenViking 0.5.2 server answered for the same requests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from session_support import commit_and_wait, ok, served_sample_workspace

TURN_FIELDS = ("turn_id", "message_kind", "source_message_ids")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    with served_sample_workspace(tmp_path_factory.mktemp("fields") / "ws") as served:
        yield served


def _context_messages(client: httpx.Client, session_id: str, budget: int = 100_000) -> list[dict[str, Any]]:
    context = ok(client.get(f"/api/v1/sessions/{session_id}/context", params={"token_budget": budget}))
    messages: list[dict[str, Any]] = context["messages"]
    return messages


def _turn_fields(message: dict[str, Any]) -> dict[str, Any]:
    return {k: message[k] for k in TURN_FIELDS if k in message}


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_turn_fields_are_stored_and_returned_and_left_out_while_unset(
    served: tuple[httpx.Client, Path],
) -> None:
    client, root = served
    query = {
        "role": "user",
        "content": "hi",
        "turn_id": "turn-1",
        "message_kind": "user_query",
        "source_message_ids": ["a", "b"],
    }
    unset = {"role": "assistant", "content": "yo", "turn_id": None, "message_kind": None}
    empty = {"role": "assistant", "content": "empty", "turn_id": "", "source_message_ids": []}
    added = ok(client.post("/api/v1/sessions/f1/messages/batch", json={"messages": [query, unset, empty]}))
    assert (added["message_count"], added["pending_tokens"]) == (3, 4)  # 0.5.2's answer
    # 0.5.2 returns a field whenever it is not null: an empty turn id or source list is returned.
    expected = [
        {"turn_id": "turn-1", "message_kind": "user_query", "source_message_ids": ["a", "b"]},
        {},
        {"turn_id": "", "source_message_ids": []},
    ]
    assert [_turn_fields(m) for m in _context_messages(client, "f1")] == expected
    live = root / "sessions/f1/messages.jsonl"
    assert [_turn_fields(line) for line in _lines(live)] == expected  # an unset field is not written

    commit_and_wait(client, "f1")
    archive = ok(client.get("/api/v1/sessions/f1/archives/archive_001"))
    assert [_turn_fields(m) for m in archive["messages"]] == expected
    archived = root / "sessions/f1/history/archive_001/messages.jsonl"
    assert [_turn_fields(line) for line in _lines(archived)] == expected


def test_a_line_written_before_the_turn_fields_existed_still_reads(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    ok(client.post("/api/v1/sessions/f2/messages", json={"role": "user", "content": "first"}))
    live = root / "sessions/f2/messages.jsonl"
    old = {"id": "msg_old", "role": "assistant", "parts": [{"type": "text", "text": "old"}], "peer_id": None}
    with live.open("a") as file:
        file.write(json.dumps({**old, "created_at": "2026-11-30T10:00:00.000Z"}) + "\n")
    said = [(m["id"], _turn_fields(m)) for m in _context_messages(client, "f2")]
    assert said[1] == ("msg_old", {})
    assert ok(client.get("/api/v1/sessions/f2"))["message_count"] == 2


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        # 0.5.2 refuses each of these naming the field (its message: body.<field>…).
        ("message_kind", "weird", "message_kind"),
        ("turn_id", 5, "turn_id"),
        ("source_message_ids", "a", "source_message_ids"),
        ("source_message_ids", [1], "source_message_ids.0"),
        # ovtui's own bounds (0.5.2 sets none).
        ("turn_id", "t" * 257, "turn_id"),
        ("source_message_ids", ["m" * 257], "source_message_ids.0"),
    ],
)
def test_a_bad_turn_field_is_refused_by_name(
    served: tuple[httpx.Client, Path], field: str, value: Any, named: str
) -> None:
    client, root = served
    message = {"role": "user", "content": "hi", field: value}
    single = client.post("/api/v1/sessions/f3/messages", json=message)
    assert single.status_code == 422, single.text
    error = single.json()["error"]
    assert error["code"] == "INVALID_ARGUMENT" and error["message"].startswith(f"{named}: "), error
    batch = client.post("/api/v1/sessions/f3/messages/batch", json={"messages": [message]})
    assert batch.status_code == 422 and batch.json()["error"]["message"].startswith(f"messages.0.{named}: ")
    assert not (root / "sessions/f3").exists()  # nothing was stored, no session made


def _tool(n: int) -> dict[str, Any]:
    return {"type": "tool", "tool_id": f"t{n}", "tool_name": "read", "tool_output": f"out {n}"}


def test_a_user_message_of_several_tool_results_is_stored_one_message_per_result(
    served: tuple[httpx.Client, Path],
) -> None:
    client, root = served
    aggregate = {
        "role": "user",
        "parts": [_tool(1), _tool(2), _tool(3)],
        "turn_id": "turn-1",
        "source_message_ids": ["x"],
        "created_at": "2026-11-30T10:00:00Z",
        "peer_id": "bob",
    }
    one = ok(client.post("/api/v1/sessions/agg/messages", json=aggregate))
    assert (one["message_count"], one["pending_tokens"]) == (3, 9)  # 0.5.2's answer
    batch = [
        {"role": "assistant", "parts": [_tool(4), _tool(5)]},  # not a user's: kept whole
        {"role": "user", "parts": [_tool(6), _tool(7)], "message_kind": "user_query"},  # kind kept
        {"role": "user", "parts": [_tool(8)]},  # one result: kept whole, no kind given
        {"role": "user", "parts": [_tool(9), {"type": "text", "text": "and text"}]},  # not tools only
        {"role": "user", "parts": [_tool(10), _tool(11)]},
    ]
    added = ok(client.post("/api/v1/sessions/agg/messages/batch", json={"messages": batch}))
    # 0.5.2's answer: ``added`` counts the messages stored, not the ones sent.
    assert (added["message_count"], added["added"], added["pending_tokens"]) == (10, 7, 37)
    session = ok(client.get("/api/v1/sessions/agg"))
    assert (session["message_count"], session["pending_tokens"], session["total_message_count"]) == (
        10,
        37,
        10,
    )

    messages = _context_messages(client, "agg")
    assert [[p["tool_id"] for p in m["parts"] if p["type"] == "tool"] for m in messages] == [
        ["t1"], ["t2"], ["t3"], ["t4", "t5"], ["t6"], ["t7"], ["t8"], ["t9"], ["t10"], ["t11"],
    ]  # fmt: skip
    first = {"turn_id": "turn-1", "message_kind": "tool_transport", "source_message_ids": ["x"]}
    assert [_turn_fields(m) for m in messages[:3]] == [first] * 3
    assert {(m["created_at"], m["peer_id"]) for m in messages[:3]} == {("2026-11-30T10:00:00Z", "bob")}
    kinds = [m.get("message_kind") for m in messages[3:]]
    assert kinds == [None, "user_query", "user_query", None, None, "tool_transport", "tool_transport"]
    assert messages[4]["created_at"] == messages[5]["created_at"]  # one request, one time
    assert messages[8]["created_at"] == messages[9]["created_at"]
    assert len({m["id"] for m in messages}) == 10
    assert [line["id"] for line in _lines(root / "sessions/agg/messages.jsonl")] == [
        m["id"] for m in messages
    ]


def test_a_split_result_without_a_tool_id_is_named_after_its_own_message(
    served: tuple[httpx.Client, Path],
) -> None:
    client, _ = served
    nameless = {
        "role": "user",
        "parts": [{"type": "tool", "tool_output": "a"}, {"type": "tool", "tool_output": "b"}],
    }
    ok(client.post("/api/v1/sessions/agg2/messages", json=nameless))
    messages = _context_messages(client, "agg2")
    assert [[p["tool_id"] for p in m["parts"]] for m in messages] == [[m["id"]] for m in messages]
    assert len(messages) == 2
