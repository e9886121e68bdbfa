"""OpenViking's retrieval, content, filesystem and session-reading routes on a real ``ovtui serve``
subprocess, with the requests OpenViking's SDK sends (its exact bodies and query strings, fields
ovtui ignores included): find and search, read / abstract / overview, ls / tree / stat, a
commit's memory_diff and archive read back, a session's context, deleting it; hostile URIs."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx2 as httpx
import pytest
from retrieval_support import (
    BOB_PREFERENCE,
    SECRET,
    compact_ok,
    error_of,
    full_ok,
    listing_ok,
    served,
    trained_sample,
    with_a_link_out,
)
from session_support import CONVERSATION

from ovtui.memory.memory_diff import MemoryDiff
from ovtui.wiring.workspace import Workspace

HOME = "viking://user/default"
CANCEL_REQUEST = "Customer C7642 here - booking B53N8D has to be cancelled, please."  # a held-out case
HIT_KEYS = ["context_type", "uri", "level", "score", "abstract", "tags", "category", "memory_type"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = with_a_link_out(trained_sample(tmp_path_factory.mktemp("retrieval") / "ws"))
    outside = root.parent / "outside"
    (root / "memories" / "config_link.md").symlink_to(root / "ovtui.toml")
    (root / "memories" / "outside_dir").symlink_to(outside)
    (root / "memories" / "root_link").symlink_to(root)  # the workspace itself, from inside the memories
    (root / "memories" / "history_link").symlink_to(root / "history")
    return root


@pytest.fixture(scope="module")
def client(workspace: Path) -> Iterator[httpx.Client]:
    with served(workspace) as client:
        yield client


def test_find_as_the_sdk_sends_it(client: httpx.Client) -> None:
    result = compact_ok(
        client.post("/api/v1/search/find", json={"query": CANCEL_REQUEST, "target_uri": "", "limit": 10})
    )
    assert list(result) == ["memories", "resources", "skills", "total"]
    hits = result["memories"]
    assert result["resources"] == result["skills"] == [] and result["total"] == len(hits) <= 10
    assert "booking_cancellation" in hits[0]["uri"]  # an experience or a trajectory of that request
    experience = next(h for h in hits if h["memory_type"] == "experiences")
    assert experience["uri"] == f"{HOME}/memories/experiences/booking_cancellation.md"
    assert (
        list(experience) == HIT_KEYS and experience["level"] == 2 and experience["context_type"] == "memory"
    )
    assert "booking cancellation" in experience["abstract"]  # its Situation, not the whole file
    assert all(h["tags"] == [f"memory_type={h['memory_type']}"] for h in hits)  # as OpenViking tags them
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert all(0 < h["score"] < 1 for h in hits)
    # Narrowed as the SDK narrows it, with every field ovtui accepts and ignores.
    narrowed = compact_ok(
        client.post(
            "/api/v1/search/find",
            json={
                "query": CANCEL_REQUEST,
                "target_uri": f"{HOME}/memories/experiences",
                "limit": 5,
                "score_threshold": 0.3,
                "context_type": "memory",
                "image_url": None,
                "tags": ["kind=x"],
                "since": "7d",
                "time_field": "updated_at",
                "level": "2",
                "include_provenance": True,
                "telemetry": {"summary": True},
                "events_time_decay_protection": "30d",
            },
        )
    )
    assert narrowed["memories"] and all(h["memory_type"] == "experiences" for h in narrowed["memories"])
    assert all(h["score"] > 0.3 for h in narrowed["memories"]) and len(narrowed["memories"]) <= 5
    wider = [h for h in hits if h["memory_type"] == "experiences"]
    assert len(narrowed["memories"]) < len(wider) or all(h["score"] > 0.3 for h in wider)


def test_a_find_says_what_it_spent_in_the_server(client: httpx.Client) -> None:
    response = client.post("/api/v1/search/find", json={"query": CANCEL_REQUEST, "limit": 3})
    compact_ok(response)
    timing = dict(part.strip().split(";dur=") for part in response.headers["Server-Timing"].split(","))
    assert list(timing) == ["find", "route"]
    find_ms, route_ms = float(timing["find"]), float(timing["route"])
    assert 0 < find_ms <= route_ms  # the route's time holds the search's
    refused = client.post("/api/v1/search/find", json={"query": CANCEL_REQUEST, "limit": 0})
    assert refused.status_code == 400 and refused.headers["Server-Timing"].startswith("route;dur=")


def test_find_filters_and_refusals(client: httpx.Client) -> None:
    by_filter = compact_ok(
        client.post(
            "/api/v1/search/find",
            json={
                "query": "",
                "target_uri": "",
                "filter": {"op": "must", "field": "memory_type", "conds": ["trajectories"]},
                "limit": 3,
            },
        )
    )
    assert by_filter["memories"] and {h["memory_type"] for h in by_filter["memories"]} == {"trajectories"}
    assert len(by_filter["memories"]) == 3 and all(h["score"] == 0.0 for h in by_filter["memories"])
    no_trajectories = compact_ok(
        client.post(
            "/api/v1/search/find",
            json={
                "query": CANCEL_REQUEST,
                "target_uri": "",
                "filter": {
                    "op": "and",
                    "conds": [{"op": "must_not", "field": "memory_type", "conds": ["trajectories"]}],
                },
                "read_content": True,
            },
        )
    )
    assert no_trajectories["memories"] and all(
        h["memory_type"] != "trajectories" for h in no_trajectories["memories"]
    )
    first = no_trajectories["memories"][0]
    assert first["content"].startswith("## Situation") and "MEMORY_FIELDS" not in first["content"]
    resources = compact_ok(
        client.post(
            "/api/v1/search/find",
            json={"query": CANCEL_REQUEST, "target_uri": "", "context_type": "resource"},
        )
    )
    assert resources["total"] == 0
    elsewhere = compact_ok(
        client.post("/api/v1/search/find", json={"query": CANCEL_REQUEST, "target_uri": "viking://resources"})
    )
    assert elsewhere["total"] == 0  # a scope ovtui holds nothing in: no hits, no error
    extra = error_of(
        client.post("/api/v1/search/find", json={"query": "q", "session_id": "s1"}), 400, "INVALID_ARGUMENT"
    )
    assert extra["message"] == "Invalid request parameters: body.session_id: Extra inputs are not permitted"
    assert extra["details"]["validation_errors"][0] == {
        "loc": ["body", "session_id"],
        "message": "Extra inputs are not permitted",
        "type": "extra_forbidden",
    }
    empty = error_of(
        client.post("/api/v1/search/find", json={"query": "", "target_uri": ""}), 400, "INVALID_ARGUMENT"
    )
    assert "must not be empty unless a filter is provided" in empty["message"]
    regex = {"op": "regex", "field": "uri", "conds": [".*"]}
    unsupported = error_of(
        client.post("/api/v1/search/find", json={"query": "q", "filter": regex}), 400, "INVALID_ARGUMENT"
    )
    assert "'regex' on 'uri' is not supported" in unsupported["message"]
    other_user = error_of(
        client.post(
            "/api/v1/search/find", json={"query": "q", "target_uri": "viking://user/mallory/memories"}
        ),
        403,
        "PERMISSION_DENIED",
    )
    assert other_user["details"] == {"resource": "viking://user/mallory/memories"}
    context_mode = client.post("/api/v1/search/search", json={"query": "q", "mode": "context"})
    assert error_of(context_mode, 400, "INVALID_ARGUMENT")
    needs_context = client.post("/api/v1/search/search", json={"query": "q", "max_tokens": 100})
    assert "require mode='context'" in error_of(needs_context, 400, "INVALID_ARGUMENT")["message"]


def test_search_with_a_session_shapes_the_ranking_and_records_uses(
    client: httpx.Client, workspace: Path
) -> None:
    plain = compact_ok(
        client.post(
            "/api/v1/search/search",
            json={"query": "what can you do for me here", "target_uri": "", "limit": 10},
        )
    )
    session = {"role": "user", "content": "My suitcase never showed up at the carousel in Madrid."}
    compact_or_full = client.post("/api/v1/sessions/bags/messages", json=session)
    assert compact_or_full.status_code == 200
    before = Workspace(workspace).reading.memory_uses()
    shaped = compact_ok(
        client.post(
            "/api/v1/search/search",
            json={
                "query": "what can you do for me here",
                "session_id": "bags",
                "target_uri": "",
                "limit": 10,
            },
        )
    )
    lost = f"{HOME}/memories/experiences/lost_baggage_report.md"
    assert "lost_baggage_report" in shaped["memories"][0]["uri"]  # the experience or its trajectory
    assert lost in [h["uri"] for h in shaped["memories"]] and lost not in [
        h["uri"] for h in plain["memories"]
    ]
    after = Workspace(workspace).reading.memory_uses()
    for hit in shaped["memories"]:  # each memory served to the session is a use, once
        had = before[hit["uri"]].count if hit["uri"] in before else 0
        assert after[hit["uri"]].count == had + 1
    # An unknown session is no error (OpenViking's way): the query alone ranks.
    unknown = compact_ok(
        client.post("/api/v1/search/search", json={"query": CANCEL_REQUEST, "session_id": "never"})
    )
    assert "booking_cancellation" in unknown["memories"][0]["uri"]
    bad_id = client.post("/api/v1/search/search", json={"query": "q", "session_id": "../x"})
    assert error_of(bad_id, 400, "INVALID_ARGUMENT")


def test_read_abstract_overview_as_the_sdk_asks(client: httpx.Client) -> None:
    uri = f"{HOME}/memories/experiences/seat_selection.md"
    body = full_ok(client.get(f"/api/v1/content/read?uri={quote(uri, safe='')}&offset=0&limit=-1"))
    assert body.startswith("## Situation") and "MEMORY_FIELDS" not in body and not body.endswith("\n")
    raw = full_ok(
        client.get("/api/v1/content/read", params={"uri": uri, "offset": 0, "limit": -1, "raw": "true"})
    )
    assert (
        raw.startswith(body) and raw.rstrip().endswith("-->") and '"experience_name": "seat_selection"' in raw
    )
    lines = body.splitlines(keepends=True)
    assert full_ok(
        client.get("/api/v1/content/read", params={"uri": uri, "offset": 1, "limit": 2})
    ) == "".join(lines[1:3])
    assert (
        full_ok(
            client.get(
                "/api/v1/content/read", params={"uri": "viking://~/memories/experiences/seat_selection.md"}
            )
        )
        == body
    )
    folder = error_of(
        client.get("/api/v1/content/read", params={"uri": f"{HOME}/memories"}), 400, "INVALID_ARGUMENT"
    )
    assert folder["details"] == {"resource": f"{HOME}/memories", "expected": "file", "actual": "directory"}
    missing = error_of(
        client.get("/api/v1/content/read", params={"uri": f"{HOME}/memories/nope.md"}), 404, "NOT_FOUND"
    )
    assert missing["message"] == f"File not found: {HOME}/memories/nope.md"
    assert missing["details"] == {"type": "file", "resource": f"{HOME}/memories/nope.md"}
    no_uri = error_of(client.get("/api/v1/content/read"), 400, "INVALID_ARGUMENT")
    assert no_uri["message"] == "Invalid request parameters: query.uri: Field required"
    abstract = full_ok(client.get(f"/api/v1/content/abstract?uri={quote(uri, safe='')}"))
    assert abstract.startswith("The customer wants to pick a seat")  # its Situation
    overview = full_ok(client.get("/api/v1/content/overview", params={"uri": uri}))
    assert overview.startswith("## Situation") and "## Approach" in overview
    folder_abstract = full_ok(
        client.get("/api/v1/content/abstract", params={"uri": f"{HOME}/memories/experiences"})
    )
    assert folder_abstract.startswith(
        "memories/experiences: 17 files, 0 folders — baggage_allowance_question"
    )
    folder_overview = full_ok(
        client.get("/api/v1/content/overview", params={"uri": f"{HOME}/memories/experiences"})
    )
    assert "- seat_selection.md: The customer wants to pick a seat" in folder_overview
    gone = error_of(
        client.get("/api/v1/content/abstract", params={"uri": f"{HOME}/memories/nope"}), 404, "NOT_FOUND"
    )
    assert gone["details"] == {"type": "resource", "resource": f"{HOME}/memories/nope"}


def test_ls_tree_stat_as_the_sdk_asks(client: httpx.Client) -> None:
    sdk_ls = (
        "/api/v1/fs/ls?uri=viking%3A%2F%2Fuser%2Fdefault%2Fmemories&simple=false&recursive=false"
        "&output=original&abs_limit=256&show_all_hidden=false&node_limit=1000&offset=0&overview_limit=4000"
    )
    entries, more = listing_ok(client.get(sdk_ls))
    assert more is False
    assert [e["name"] for e in entries] == ["cases", "experiences", "trajectories"]  # links left out
    assert list(entries[0]) == ["name", "size", "mode", "modTime", "isDir", "uri"]
    assert entries[1]["uri"] == f"{HOME}/memories/experiences" and entries[1]["isDir"] is True
    assert entries[1]["modTime"].endswith("Z") and len(entries[1]["modTime"]) == 20
    agent, _ = listing_ok(client.get("/api/v1/fs/ls", params={"uri": f"{HOME}/memories/experiences"}))
    seat = next(e for e in agent if e["uri"].endswith("/seat_selection.md"))
    assert list(seat) == ["uri", "size", "isDir", "modTime", "abstract"] and seat["abstract"] == ""
    assert seat["modTime"][-5] == "." and seat["modTime"].endswith("Z")
    simple, _ = listing_ok(
        client.get("/api/v1/fs/ls", params={"uri": f"{HOME}/memories/experiences", "simple": "true"})
    )
    assert f"{HOME}/memories/experiences/seat_selection.md" in simple
    assert all(not u.endswith("escape.md") for u in simple)
    page, more = listing_ok(
        client.get(
            "/api/v1/fs/ls", params={"uri": f"{HOME}/memories/experiences", "node_limit": 2, "offset": 1}
        )
    )
    assert len(page) == 2 and more is True and page[0]["uri"] == agent[1]["uri"]
    root, _ = listing_ok(
        client.get(
            "/api/v1/fs/ls", params={"uri": HOME, "show_all_hidden": "true", "extra_fields": ["id", "count"]}
        )
    )
    assert {e["uri"].rsplit("/", 1)[1] for e in root} <= {"memories", "peers", "sessions", "history"}
    sdk_tree = (
        f"/api/v1/fs/tree?uri={quote(HOME + '/memories', safe='')}&output=original&abs_limit=128"
        "&show_all_hidden=false&node_limit=1000&level_limit=3&offset=0&overview_limit=4000"
    )
    tree, _ = listing_ok(client.get(sdk_tree))
    assert [e["rel_path"] for e in tree[:3]] == [
        "cases",
        "experiences",
        "experiences/baggage_allowance_question.md",
    ]
    assert list(tree[0]) == ["name", "size", "mode", "modTime", "isDir", "rel_path", "uri"]
    assert any(e["rel_path"] == "experiences/seat_selection.md" for e in tree)
    folders, _ = listing_ok(
        client.get("/api/v1/fs/tree", params={"uri": HOME, "directories_only": "true", "level_limit": 1})
    )
    assert all(e["isDir"] for e in folders) and all("/" not in e["rel_path"] for e in folders)
    stat = full_ok(
        client.get("/api/v1/fs/stat", params={"uri": f"{HOME}/memories/experiences/seat_selection.md"})
    )
    assert list(stat) == ["name", "size", "mode", "modTime", "isDir", "uri", "isLocked", "id"]
    assert stat["isDir"] is False and len(stat["id"]) == 32
    missing = error_of(
        client.get("/api/v1/fs/ls", params={"uri": f"{HOME}/memories/nothing"}), 404, "NOT_FOUND"
    )
    assert missing["details"] == {"type": "directory", "resource": f"{HOME}/memories/nothing"}


def test_a_commits_memory_diff_and_archive_read_back_then_the_session_deleted(
    client: httpx.Client, workspace: Path
) -> None:
    client.post("/api/v1/sessions/talk/messages/batch", json={"messages": CONVERSATION}).raise_for_status()
    accepted = client.post("/api/v1/sessions/talk/commit").json()["result"]
    task: dict[str, object] = {}
    while task.get("status") not in ("completed", "failed"):
        task = client.get(f"/api/v1/tasks/{accepted['task_id']}", params={"wait": 5}).json()["result"]
    assert task["status"] == "completed", task
    result = task["result"]
    assert isinstance(result, dict)
    diff_text = full_ok(client.get("/api/v1/content/read", params={"uri": result["memory_diff_uri"]}))
    diff = MemoryDiff.model_validate_json(diff_text)
    assert diff.kind == "session_commit" and diff.archive_uri == accepted["archive_uri"]
    messages = full_ok(
        client.get(
            "/api/v1/content/read", params={"uri": "viking://session/talk/history/archive_001/messages.jsonl"}
        )
    )
    assert len(messages.splitlines()) == len(CONVERSATION)
    archive = full_ok(client.get("/api/v1/sessions/talk/archives/archive_001"))
    assert (
        list(archive) == ["archive_id", "abstract", "overview", "messages"]
        and archive["archive_id"] == "archive_001"
    )
    assert [m["role"] for m in archive["messages"]] == [m["role"] for m in CONVERSATION]
    first = archive["messages"][0]
    assert first["id"].startswith("msg_") and first["parts"] == [
        {"type": "text", "text": CONVERSATION[0]["content"]}
    ]
    added = [op.uri for op in diff.operations.adds]
    assert added and any(uri in archive["overview"] for uri in added)
    missing = client.get("/api/v1/sessions/talk/archives/archive_009")
    assert missing.status_code == 404 and missing.json() == {
        "status": "error",
        "error": {"code": "NOT_FOUND", "message": "Archive archive_009 not found"},
    }
    context = full_ok(client.get("/api/v1/sessions/talk/context", params={"token_budget": 128000}))
    assert context["messages"] == [] and context["latest_archive_overview"] == archive["overview"]
    assert (
        context["stats"]["totalArchives"] == 1
        and context["estimatedTokens"] == context["stats"]["archiveTokens"] > 0
    )
    client.post(
        "/api/v1/sessions/talk/messages", json={"role": "user", "content": "one more thing"}
    ).raise_for_status()
    tight = full_ok(client.get("/api/v1/sessions/talk/context", params={"token_budget": 4}))
    assert [m["parts"] for m in tight["messages"]] == [[{"type": "text", "text": "one more thing"}]]
    assert tight["latest_archive_overview"] == "" and tight["estimatedTokens"] == 4
    negative = error_of(
        client.get("/api/v1/sessions/talk/context", params={"token_budget": -1}), 400, "INVALID_ARGUMENT"
    )
    assert negative["details"] == {"field": "token_budget", "value": -1}
    memories = {uri: (workspace / uri.split("/default/", 1)[1]).read_text() for uri in added}
    assert full_ok(client.delete("/api/v1/sessions/talk")) == {"session_id": "talk"}
    assert not (workspace / "sessions" / "talk").exists()
    assert all(
        (workspace / uri.split("/default/", 1)[1]).read_text() == text for uri, text in memories.items()
    )
    for again in (client.delete("/api/v1/sessions/talk"), client.get("/api/v1/sessions/talk/context")):
        gone = error_of(again, 404, "NOT_FOUND")
        assert gone["message"] == "Session not found: talk" and gone["details"] == {
            "type": "session",
            "resource": "talk",
        }


def test_a_peer_is_seen_only_by_whom_it_is_shown_to(client: httpx.Client) -> None:
    uri = f"{HOME}/peers/bob/memories/preferences/seating.md"
    query = {"query": "Bob wants an aisle seat near the front of the plane", "target_uri": "", "limit": 3}
    hidden = compact_ok(client.post("/api/v1/search/find", json=query))
    assert uri not in [h["uri"] for h in hidden["memories"]]
    as_bob = {"X-OpenViking-Actor-Peer": "bob"}
    shown = compact_ok(client.post("/api/v1/search/find", json=query, headers=as_bob))
    assert shown["memories"][0]["uri"] == uri
    assert full_ok(client.get("/api/v1/content/read", params={"uri": uri}, headers=as_bob)) == BOB_PREFERENCE
    denied = error_of(client.get("/api/v1/content/read", params={"uri": uri}), 403, "PERMISSION_DENIED")
    assert denied["details"] == {"resource": uri} and BOB_PREFERENCE not in json.dumps(denied)
    peers, _ = listing_ok(client.get("/api/v1/fs/ls", params={"uri": f"{HOME}/peers"}))
    assert peers == []
    assert [
        e["uri"]
        for e in listing_ok(client.get("/api/v1/fs/ls", params={"uri": f"{HOME}/peers"}, headers=as_bob))[0]
    ] == [f"{HOME}/peers/bob"]
    # A session's MemoryPolicy says which peers a search made for it sees.
    only_carol = {"session_id": "carol-only", "memory_policy": {"peer": {"allowed_peer_ids": ["carol"]}}}
    client.post("/api/v1/sessions", json=only_carol).raise_for_status()
    client.post("/api/v1/sessions", json={"session_id": "anyone"}).raise_for_status()
    for session, sees in (("carol-only", False), ("anyone", True)):
        found = compact_ok(client.post("/api/v1/search/search", json={**query, "session_id": session}))
        assert (uri in [h["uri"] for h in found["memories"]]) is sees, session


HOSTILE = [
    ("/etc/passwd", 400, "INVALID_URI"),
    ("viking://temp/x", 400, "INVALID_URI"),
    (f"{HOME}/memories/../ovtui.toml", 400, "INVALID_URI"),
    (f"{HOME}/memories/./experiences", 400, "INVALID_URI"),
    (f"{HOME}//ovtui.toml", 400, "INVALID_URI"),
    ("viking://user/mallory/memories/profile.md", 403, "PERMISSION_DENIED"),
    (f"{HOME}/ovtui.toml", 403, "PERMISSION_DENIED"),
    (f"{HOME}/.ovtui/lock", 403, "PERMISSION_DENIED"),
    (f"{HOME}/.ovtui", 403, "PERMISSION_DENIED"),
    (f"{HOME}/runs", 403, "PERMISSION_DENIED"),
    (f"{HOME}/datasets/support/test.jsonl", 403, "PERMISSION_DENIED"),
    (f"{HOME}/history/index.jsonl", 403, "PERMISSION_DENIED"),
    (f"{HOME}/sessions/bags/lock", 403, "PERMISSION_DENIED"),
    (f"{HOME}/peers/bob/memories/preferences/seating.md", 403, "PERMISSION_DENIED"),
    (f"{HOME}/memories/experiences/escape.md", 403, "PERMISSION_DENIED"),  # a link leaving the workspace
    (f"{HOME}/memories/outside_dir/secret.md", 403, "PERMISSION_DENIED"),  # through a linked folder
    (f"{HOME}/memories/config_link.md", 403, "PERMISSION_DENIED"),  # a link to the bookkeeping
    (f"{HOME}/memories/root_link", 403, "PERMISSION_DENIED"),  # a link to the workspace root
    (f"{HOME}/memories/root_link/ovtui.toml", 403, "PERMISSION_DENIED"),
    (f"{HOME}/memories/root_link/memories", 403, "PERMISSION_DENIED"),
    (f"{HOME}/memories/history_link", 403, "PERMISSION_DENIED"),  # out of the memory tree
]


@pytest.mark.parametrize(("uri", "status", "code"), HOSTILE)
def test_hostile_uris_are_refused_and_nothing_is_read(
    client: httpx.Client, workspace: Path, uri: str, status: int, code: str
) -> None:
    config = (workspace / "ovtui.toml").read_text()
    answers = [
        client.get("/api/v1/content/read", params={"uri": uri, "raw": "true"}),
        client.get("/api/v1/content/abstract", params={"uri": uri}),
        client.get("/api/v1/content/overview", params={"uri": uri}),
        client.get("/api/v1/fs/stat", params={"uri": uri}),
        client.get("/api/v1/fs/ls", params={"uri": uri}),
        client.get("/api/v1/fs/tree", params={"uri": uri}),
        client.post("/api/v1/search/find", json={"query": "zebra", "target_uri": uri}),
    ]
    for response in answers:
        error = error_of(response, status, code)
        assert SECRET not in response.text and config not in response.text
        if "_link" in uri:  # no name of what the link leads to
            words = set(re.findall(r"[\w.]+", response.text))
            assert not {"inbox", "datasets", "runs", "index.jsonl"} & words
        if code == "INVALID_URI":
            assert error["details"] == {"uri": uri, "reason": error["details"]["reason"]}
        else:
            assert error["details"]["resource"].startswith("viking://user/")
    assert os.path.islink(workspace / "memories" / "experiences" / "escape.md")  # nothing was changed
