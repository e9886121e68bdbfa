"""Session commits with the LLM backend: the real ``openai`` client against the fake OpenAI server on
127.0.0.1, through the real HTTP session API. A conversation becomes the model's profile,
preference, entity, event and case files (the case trains as a rollout); a memory found by the
prefetch is patched, not duplicated; a model that is down or answers garbage fails the task with
nothing written; two concurrent commits editing one profile both land."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from llm_session_support import PREFIX, commit, memory, said, served
from session_support import CONVERSATION

from ovtui.core.fileformat import parse_memory
from ovtui.memory.ledger import UseLedger
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.memory.merge_ops import SearchReplace, render_blocks
from ovtui.storage.paths import WorkspacePaths
from ovtui.testing.openai_server import RecordedRequest, Reply
from ovtui.testing.session_model import PREFERENCE_LINE, PROFILE_LINE, SessionModel, conversation_answer


def snapshot(root: Path) -> dict[str, str]:
    """Every memory file, the history records and the use ledger: what a failed commit must not touch."""
    files = [*root.joinpath("memories").rglob("*.md"), *root.joinpath("history").rglob("*")]
    files.append(root / ".ovtui/ledger.jsonl")
    return {str(p.relative_to(root)): p.read_text() for p in files if p.is_file()}


def test_a_conversation_becomes_the_models_memories_and_its_case_trains(tmp_path: Path) -> None:
    model = SessionModel()
    with served(tmp_path, model) as (client, root, _fake):
        task = commit(client, "m1", CONVERSATION)
    assert task["status"] == "completed", task
    result = task["result"]
    assert result["memories_extracted"] == {
        "profile": 1,
        "preferences": 1,
        "entities": 1,
        "events": 1,
        "cases": 1,
    }
    usage = result["token_usage"]
    assert usage["model_calls"] == 1 and model.extraction_calls == {"m1": 1}
    assert (
        usage["prompt_tokens"] > 0
        and usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    )
    answer = conversation_answer()
    assert memory(root, "memories/profile.md").content == PROFILE_LINE
    assert memory(root, "memories/preferences/default/seating.md").content == PREFERENCE_LINE
    entity = memory(root, "memories/entities/order/order_1234.md")
    assert entity.content == answer["entities"][0]["content"] and entity.fields["category"] == "order"
    # the event is filed under its first message's date, its body made as OpenViking makes it
    event = memory(root, "memories/events/2026/11/30/order_cancellation.md")
    assert event.fields["summary"] == "On 2026-11-30 the user had order 1234 cancelled."
    assert event.content.startswith(
        "# Summary\nOn 2026-11-30 the user had order 1234 cancelled.\n# 2026-11-30 (Monday) ChatLog:\n"
        "**user**: Hi, my name is Ana Ruiz."
    )
    # the case: a case file named for this commit, whose rubric is the model's plus the conversation's
    case = memory(root, "memories/cases/cancel_order_m1_archive_001.md")
    criteria = [c["name"] for c in json.loads(case.fields["rubric"])["criteria"]]
    assert criteria == ["order_cancelled", "tools_succeed", "answers_user"]
    # … trained as a rollout: the trainer's trajectory ran that case, and its record is the commit's
    trajectories = [parse_memory(p.read_text()) for p in root.joinpath("memories/trajectories").glob("*.md")]
    assert any(t.fields.get("case_name") == "cancel_order_m1_archive_001" for t in trajectories)
    # named by the session's first message and the archive, as OpenViking names it
    archive_uri = f"{PREFIX}sessions/m1/history/archive_001"
    digest = hashlib.sha256(archive_uri.encode()).hexdigest()[:16]
    [named] = root.joinpath("memories/trajectories").glob(f"booking_change_20261130100000_{digest}.md")
    trajectory = parse_memory(named.read_text())
    assert trajectory.fields["source_archive_uri"] == archive_uri
    assert trajectory.fields["retrieval_anchor"] and trajectory.fields["task_query"]  # always there
    assert "related_case_ids" not in trajectory.fields
    assert len(result["history_ids"]) == 2
    diff = MemoryDiff.model_validate_json(
        (root / "sessions/m1/history/archive_001/memory_diff.json").read_text()
    )
    added = {op.uri for op in diff.operations.adds}
    assert (
        f"{PREFIX}memories/profile.md" in added
        and f"{PREFIX}memories/preferences/default/seating.md" in added
    )


def _events_that_cannot_be_filed(request: RecordedRequest) -> Reply:
    answer = conversation_answer()
    event = answer["events"][0]
    answer["events"] = [
        {**event, "event_name": "out_of_bounds", "ranges": "7-9"},  # four messages
        {**event, "event_name": "agent_only", "ranges": "1-2"},  # the agent's messages only
    ]
    return Reply.json(answer)


def test_events_that_cannot_be_filed_are_skipped_with_openvikings_reasons(tmp_path: Path) -> None:
    model = SessionModel({"e1": _events_that_cannot_be_filed})
    with served(tmp_path, model) as (client, root, _fake):
        task = commit(client, "e1", CONVERSATION)
    assert task["status"] == "completed", task
    assert not root.joinpath("memories/events").exists()
    diff = json.loads((root / "sessions/e1/history/archive_001/memory_diff.json").read_text())
    assert diff["skipped_operations"] == [
        {
            "memory_type": "events",
            "reason_code": "invalid_ranges",
            "reason": "Message ranges are malformed or out of bounds",
        },
        {
            "memory_type": "events",
            "reason_code": "no_writable_target",
            "reason": "No writable memory target could be resolved",
        },
    ]
    assert diff["summary"]["total_skipped"] == 2


def _patch_seating(request: RecordedRequest) -> Reply:
    patch = render_blocks([SearchReplace(PREFERENCE_LINE, "- The user prefers aisle seats on flights.")])
    return Reply.json({"preferences": [{"topic": "seating", "content": patch}]})


def test_a_prefetched_memory_is_patched_not_duplicated(tmp_path: Path) -> None:
    model = SessionModel({"m2": _patch_seating})
    with served(tmp_path, model) as (client, root, fake):
        assert commit(client, "m1", CONVERSATION)["status"] == "completed"
        task = commit(client, "m2", said("These days I'd rather sit by the aisle on flights."))
        seating = f"{PREFIX}memories/preferences/default/seating.md"
        prompts = [r.prompt_text for r in fake.chat_requests]
    assert task["status"] == "completed", task
    assert task["result"]["token_usage"]["model_calls"] == 1  # shown up front: no look-up round
    assert any("session m2" in p and f"=== FILE {seating}" in p for p in prompts)
    assert [p.name for p in root.joinpath("memories/preferences/default").glob("*.md")] == ["seating.md"]
    assert (
        memory(root, "memories/preferences/default/seating.md").content
        == "- The user prefers aisle seats on flights."
    )
    [history_id] = task["result"]["history_ids"]
    diff = MemoryDiff.model_validate_json((root / f"history/{history_id}/memory_diff.json").read_text())
    assert [op.uri for op in diff.operations.updates] == [seating] and diff.operations.adds == []
    assert UseLedger(WorkspacePaths(root)).usage()[seating].count >= 1  # the prefetch is a use


def _assert_nothing_written(root: Path, session_id: str, before: dict[str, str]) -> None:
    archive = root / f"sessions/{session_id}/history/archive_001"
    assert (archive / "messages.jsonl").is_file()  # the archive is kept
    assert not (archive / "memory_diff.json").exists()
    assert snapshot(root) == before


def test_a_model_that_is_down_fails_the_task_and_writes_nothing(tmp_path: Path) -> None:
    model = SessionModel({"down": lambda request: Reply.server_error()})
    with served(tmp_path, model) as (client, root, _fake):
        before = snapshot(root)
        task = commit(client, "down", CONVERSATION)
        assert task["status"] == "failed" and "HTTP 500" in task["error"], task
        assert model.extraction_calls == {"down": 2}  # the first try and the one retry configured
        _assert_nothing_written(root, "down", before)


def test_a_refused_connection_fails_the_task_and_writes_nothing(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    with served(tmp_path, SessionModel(), base_url=closed) as (client, root, _fake):
        before = snapshot(root)
        task = commit(client, "refused", CONVERSATION)
        assert task["status"] == "failed" and "connection error" in task["error"], task
        _assert_nothing_written(root, "refused", before)


def _bad_case(request: RecordedRequest) -> Reply:
    answer = conversation_answer()
    answer["cases"][0]["rubric"] = "order must be cancelled"  # not a JSON rubric, twice
    return Reply.json(answer)


def test_garbage_answers_fail_the_task_and_write_nothing(tmp_path: Path) -> None:
    model = SessionModel({"prose": lambda request: Reply.text("The user seems nice."), "badcase": _bad_case})
    with served(tmp_path, model) as (client, root, _fake):
        before = snapshot(root)
        prose = commit(client, "prose", CONVERSATION)
        assert prose["status"] == "failed" and "unusable answer" in prose["error"], prose
        _assert_nothing_written(root, "prose", before)
        bad = commit(client, "badcase", CONVERSATION)
        assert bad["status"] == "failed" and "cases[0] (cancel_order)" in bad["error"], bad
        assert "rubric" in bad["error"]
        _assert_nothing_written(root, "badcase", before)
    # each: the answer and the one repair round it was given
    assert model.extraction_calls == {"prose": 2, "badcase": 2}


def test_two_concurrent_commits_editing_one_profile_both_land(tmp_path: Path) -> None:
    both_asked = threading.Barrier(2, timeout=20)  # both extractions are in flight before either answers

    def add_a_line(request: RecordedRequest) -> Reply:
        both_asked.wait()
        return Reply.json({"profile": [{"content": f"{PROFILE_LINE}\n- The user works as a nurse."}]})

    def rename(request: RecordedRequest) -> Reply:
        both_asked.wait()
        patch = render_blocks(
            [SearchReplace(PROFILE_LINE, "- The user's name is Ana Ruiz; she goes by Ana.")]
        )
        return Reply.json({"profile": [{"content": patch}]})

    model = SessionModel({"k1": add_a_line, "k2": rename})
    with served(tmp_path, model) as (client, root, _fake):
        assert commit(client, "seed", CONVERSATION)["status"] == "completed"
        with ThreadPoolExecutor(2) as pool:
            tasks = list(
                pool.map(
                    lambda s: commit(client, s[0], said(s[1])),
                    [("k1", "I work as a nurse."), ("k2", "Call me Ana.")],
                )
            )
    assert [t["status"] for t in tasks] == ["completed", "completed"], tasks
    assert all(t["result"]["errors"] == [] for t in tasks), tasks
    lines = memory(root, "memories/profile.md").content.splitlines()
    assert sorted(lines) == [
        "- The user works as a nurse.",
        "- The user's name is Ana Ruiz; she goes by Ana.",
    ]


def test_a_search_another_commit_consumed_is_reported_not_a_crash(tmp_path: Path) -> None:
    both_asked = threading.Barrier(2, timeout=20)

    def renamer(new_line: str) -> Callable[[RecordedRequest], Reply]:
        def answer(request: RecordedRequest) -> Reply:
            both_asked.wait()
            return Reply.json(
                {"profile": [{"content": render_blocks([SearchReplace(PROFILE_LINE, new_line)])}]}
            )

        return answer

    names = ["- The user's name is Ana Ruiz-Marín.", "- The user's name is Ana Marín."]
    model = SessionModel({"r1": renamer(names[0]), "r2": renamer(names[1])})
    with served(tmp_path, model) as (client, root, _fake):
        assert commit(client, "seed", CONVERSATION)["status"] == "completed"
        with ThreadPoolExecutor(2) as pool:
            tasks = list(pool.map(lambda s: commit(client, s, said("About my name.")), ["r1", "r2"]))
    assert [t["status"] for t in tasks] == ["completed", "completed"], tasks
    profile = memory(root, "memories/profile.md").content
    assert profile in names  # the first rename landed; the second's SEARCH text was gone
    # the commit whose rename was left out is told; the other one is not
    [landed] = [t for t in tasks if t["result"]["errors"] == []]
    [told] = [t for t in tasks if t["result"]["errors"]]
    assert profile == names[["r1", "r2"].index(landed["resource_id"])]
    [error] = told["result"]["errors"]
    assert error.startswith("profile 'profile': block 1: SEARCH text not found"), error


def test_a_peers_memory_from_the_model_goes_to_the_peers_space(tmp_path: Path) -> None:
    def answer(request: RecordedRequest) -> Reply:
        return Reply.json(
            {"preferences": [{"topic": "trains", "content": "- Bob prefers trains.", "peer_id": "bob"}]}
        )

    model = SessionModel({"p1": answer})
    with served(tmp_path, model) as (client, root, fake):
        task = commit(client, "p1", [{"role": "user", "content": "I prefer trains.", "peer_id": "bob"}])
        schema = fake.chat_requests[-1].body["response_format"]["json_schema"]["schema"]
    assert task["status"] == "completed", task
    assert schema["properties"]["preferences"]["items"]["properties"]["peer_id"]["enum"] == ["bob"]
    assert memory(root, "peers/bob/memories/preferences/bob/trains.md").content == "- Bob prefers trains."
    assert not (root / "memories/preferences/default/trains.md").exists()


def test_a_task_reads_running_while_its_extraction_runs(tmp_path: Path) -> None:
    """pending → running → completed, seen by a client: the model holds its answer until released."""
    asked, release = threading.Event(), threading.Event()

    def held(request: RecordedRequest) -> Reply:
        asked.set()
        release.wait(30)
        return Reply.json(conversation_answer())

    with served(tmp_path, SessionModel({"held": held})) as (client, _root, _fake):
        try:
            batch = {"messages": CONVERSATION}
            client.post("/api/v1/sessions/held/messages/batch", json=batch).raise_for_status()
            task_id = client.post("/api/v1/sessions/held/commit").json()["result"]["task_id"]
            first = client.get(f"/api/v1/tasks/{task_id}").json()["result"]["status"]
            assert first in ("pending", "running")
            assert asked.wait(30)
            assert client.get(f"/api/v1/tasks/{task_id}").json()["result"]["status"] == "running"
            listed = client.get("/api/v1/tasks", params={"status": "running"}).json()["result"]
            assert [t["task_id"] for t in listed] == [task_id]
        finally:
            release.set()
        done = client.get(f"/api/v1/tasks/{task_id}", params={"wait": 30}).json()["result"]
        assert done["status"] == "completed", done
