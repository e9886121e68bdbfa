"""A case a session commit extracts links to what it produced: the trajectory of its run (written
with the case, in the commit's own record) and the experiences that trajectory fed (written with
them, in the training's record), each mirrored as a backlink. Reverting the training's record takes
out the experience links and keeps the trajectory's; reverting the commit's record first is no
conflict: the links added after it are kept where the file stays. With ``[review] policy = "ask"``
the experience links come with the apply of the approved plan."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from server_support import threaded_server
from session_support import CONVERSATION
from workspace_support import build_sample_workspace, history_of, memory_of

from ovtui.core.fileformat import MemoryFile, parse_memory
from ovtui.memory.links import DERIVED_FROM, RELATED_TO
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.memory.revert import revert
from ovtui.servers.openviking.app import create_session_app
from ovtui.wiring.workspace import Workspace


@pytest.fixture(params=["all"])
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[httpx.Client, Workspace]]:
    """The session API of a fresh sample workspace with ``[review] policy`` = the param."""
    root = build_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', f'policy = "{request.param}"'))
    ws = Workspace(root)
    with (
        threaded_server(create_session_app(ws, watch_inbox=False)) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client, ws


def ok(response: httpx.Response) -> Any:
    body = response.json()
    assert response.status_code == 200 and body["status"] == "ok", body
    return body["result"]


def commit_conversation(client: httpx.Client, session_id: str) -> dict[str, Any]:
    ok(client.post("/api/v1/sessions", json={"session_id": session_id}))
    ok(client.post(f"/api/v1/sessions/{session_id}/messages/batch", json={"messages": CONVERSATION}))
    task_id = ok(client.post(f"/api/v1/sessions/{session_id}/commit"))["task_id"]
    for _ in range(60):  # each poll waits server-side until the task ends (5 s at most)
        task: dict[str, Any] = ok(client.get(f"/api/v1/tasks/{task_id}", params={"wait": 5}))
        if task["status"] in ("completed", "failed"):
            assert task["status"] == "completed", task
            return task
    raise AssertionError("the commit never finished")


def read(ws: Workspace, uri: str) -> MemoryFile:
    return parse_memory(ws.reading.path_for(uri).read_text(encoding="utf-8"), uri=uri)


def relations(memory: MemoryFile, key: str) -> set[tuple[str, str, str]]:
    return {(x["from_uri"], x["to_uri"], x["link_type"]) for x in memory.fields.get(key) or []}


def run_of(ws: Workspace, case_uri: str) -> str:
    """The one trajectory whose ``case_uris`` names the case."""
    found = [
        memory_of(ws).paths.uri_for(path)
        for path in ws.root.joinpath("memories/trajectories").glob("*.md")
        if case_uri in (parse_memory(path.read_text(encoding="utf-8")).fields.get("case_uris") or [])
    ]
    assert len(found) == 1, found
    return found[0]


@dataclass
class Committed:
    """One committed conversation: its records (the commit's own, the training's) and its case."""

    commit_id: str
    commit_record: MemoryDiff
    training_id: str
    training_record: MemoryDiff
    case_uri: str
    task: dict[str, Any]


def commit_one(client: httpx.Client, ws: Workspace) -> Committed:
    task = commit_conversation(client, "s1")
    history = history_of(ws)
    by_kind = {history.get(r).kind: r for r in task["result"]["history_ids"]}
    commit_id = by_kind.pop("session_commit")
    [training_id] = by_kind.values()
    commit_record = history.get(commit_id)
    [case_uri] = [op.uri for op in commit_record.operations.adds if op.memory_type == "cases"]
    return Committed(commit_id, commit_record, training_id, history.get(training_id), case_uri, task)


def test_case_links_its_trajectory_and_experiences_and_revert_takes_the_experience_links_out(
    served: tuple[httpx.Client, Workspace],
) -> None:
    client, ws = served
    done = commit_one(client, ws)
    case_uri = done.case_uri
    trajectory_uri = run_of(ws, case_uri)
    ops = done.training_record.operations
    experiences = {op.uri for op in ops.adds if op.memory_type == "experiences"} | {
        op.uri for op in ops.updates if op.memory_type == "experiences"
    }
    assert experiences

    # the trajectory names the case it ran and the archive it came from
    trajectory = read(ws, trajectory_uri)
    assert trajectory.fields["case_uris"] == [case_uri]
    assert trajectory.fields["source_archive_uri"] == done.task["result"]["archive_uri"]
    # the case links to its trajectory (in the commit's record) and to every experience it fed
    case = read(ws, case_uri)
    assert relations(case, "links") == {(case_uri, trajectory_uri, RELATED_TO)} | {
        (case_uri, uri, RELATED_TO) for uri in experiences
    }
    [case_add] = [op for op in done.commit_record.operations.adds if op.uri == case_uri]
    assert relations(parse_memory(case_add.after), "links") == {(case_uri, trajectory_uri, RELATED_TO)}
    # mirrored: backlinks on the trajectory and on each experience
    assert relations(trajectory, "backlinks") == {(case_uri, trajectory_uri, RELATED_TO)} | {
        (uri, trajectory_uri, DERIVED_FROM) for uri in experiences
    }
    for uri in experiences:
        assert (case_uri, uri, RELATED_TO) in relations(read(ws, uri), "backlinks")

    # reverting the training's record removes the experience links; the trajectory's stays
    revert(memory_of(ws), done.training_id)
    assert relations(read(ws, case_uri), "links") == {(case_uri, trajectory_uri, RELATED_TO)}
    assert relations(read(ws, trajectory_uri), "backlinks") == {(case_uri, trajectory_uri, RELATED_TO)}


def test_the_commit_record_reverts_first_keeping_links_added_after_it(
    served: tuple[httpx.Client, Workspace],
) -> None:
    client, ws = served
    done = commit_one(client, ws)
    trajectory_uri = run_of(ws, done.case_uri)
    # the training's record changed the case file (its experience links) after the commit's record:
    # relations are no conflict, so the older record reverts on its own
    result = revert(memory_of(ws), done.commit_id)
    assert done.case_uri in result.deleted_uris and not ws.reading.path_for(done.case_uri).exists()
    backlinks = relations(read(ws, trajectory_uri), "backlinks")
    assert not any(source == done.case_uri for source, _, _ in backlinks)  # the commit's link went
    assert any(link_type == DERIVED_FROM for _, _, link_type in backlinks)  # the training's stayed


@pytest.mark.parametrize("served", ["ask"], indirect=True)
def test_a_plan_approved_in_review_links_the_case_to_its_experiences(
    served: tuple[httpx.Client, Workspace],
) -> None:
    client, ws = served
    task = commit_conversation(client, "s1")
    [plan_id] = task["result"]["pending_plans"]
    [commit_id] = task["result"]["history_ids"]  # only the user memories: the plan waits
    [case_uri] = [op.uri for op in history_of(ws).get(commit_id).operations.adds if op.memory_type == "cases"]
    trajectory_uri = run_of(ws, case_uri)
    assert relations(read(ws, case_uri), "links") == {(case_uri, trajectory_uri, RELATED_TO)}
    ws.review.decide_all(plan_id, "approved")
    applied = asyncio.run(ws.review.apply_pending(plan_id))
    assert applied.written_uris
    assert relations(read(ws, case_uri), "links") == {(case_uri, trajectory_uri, RELATED_TO)} | {
        (case_uri, uri, RELATED_TO) for uri in applied.written_uris
    }
