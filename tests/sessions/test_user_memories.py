"""User memories of session commits: written through generic memory-type plans (profile, preferences,
entities, cases), merged per file across sessions, no-ops left out, recorded and revertible, batched
across concurrent commits, or parked for Review when configured."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from session_support import CONVERSATION
from workspace_support import build_sample_workspace, history_of, memory_of, plans_of

from ovtui.checks.workspace import CheckReport, check_memories
from ovtui.cli.main import main as cli_main
from ovtui.core.context import RunContext
from ovtui.core.fileformat import parse_memory
from ovtui.memory.merge_ops import SearchReplace, render_blocks
from ovtui.memory.revert import revert
from ovtui.plugins.session_extraction import ExtractedMemory
from ovtui.protocols.sessions import AddMessageRequest
from ovtui.sessions.commit import CommitOutcome
from ovtui.sessions.inbox import commit_messages
from ovtui.sessions.user_memories import StreamingMemoryUpdater
from ovtui.wiring.workspace import Workspace


def workspace(tmp: Path, extra: str = "") -> Workspace:
    root = build_sample_workspace(tmp / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"') + extra)
    return Workspace(root)


async def commit_all(ws: Workspace, conversations: dict[str, list[dict[str, Any]]]) -> list[CommitOutcome]:
    sessions = ws.parts.sessions
    committer = ws.parts.session_committer(RunContext())
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
    # only the clause that states the fact: the greeting and the request around it are left out
    assert profile.startswith("- My name is Ana Ruiz\n") and "Hi" not in profile
    [preference] = (root / "memories/preferences/default").glob("*.md")
    assert preference.read_text().startswith("- I prefer window seats\n")
    assert "order_id" in (root / "memories/entities/order_id/1234.md").read_text()
    assert len(list((root / "memories/cases").glob("*.md"))) == 1
    history = history_of(ws)
    records = {rid: history.get(rid) for rid in outcome.history_ids}
    [user_record] = [rid for rid, r in records.items() if r.kind == "session_commit"]
    added = {op.uri.split("/memories/", 1)[1] for op in records[user_record].operations.adds}
    assert {"profile.md", "entities/order_id/1234.md"} <= added
    # the archive's memory_diff lists the user memories and the training together
    diff_uris = set(outcome.diff.operations.uris())
    assert {op.uri for op in records[user_record].operations.adds} <= diff_uris
    assert any("/experiences/" in uri for uri in diff_uris)
    revert(memory_of(ws), user_record)
    assert not (root / "memories/profile.md").exists()


def test_repeated_facts_are_no_ops_and_new_lines_merge(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    asyncio.run(commit_all(ws, {"s1": CONVERSATION}))
    [again] = asyncio.run(commit_all(ws, {"s2": CONVERSATION}))
    history = history_of(ws)
    records = [history.get(rid) for rid in again.history_ids]
    [user_record] = [r for r in records if r.kind == "session_commit"]
    # the same facts again change no file; only the conversation's own case is new (and its run's
    # trajectory gains the case's backlink)
    assert {op.memory_type for op in user_record.operations.updates} == {"trajectories"}
    assert {op.memory_type for op in user_record.operations.adds} == {"cases"}
    more = [{"role": "user", "content": "I live in Porto. My name is Ana Ruiz."}]
    [merged] = asyncio.run(commit_all(ws, {"s3": more}))
    [record] = [history.get(rid) for rid in merged.history_ids]
    [update] = record.operations.updates
    assert update.uri.endswith("/memories/profile.md")
    profile = (ws.root / "memories/profile.md").read_text()
    assert profile.count("My name is Ana Ruiz") == 1 and "I live in Porto" in profile


PEOPLE = ["Ana", "Bruno", "Carla", "Dario", "Eva", "Filipe"]


def six_introductions() -> dict[str, list[dict[str, Any]]]:
    """Six sessions committed at once, each stating a name (one shared file) and a preference of
    its own (a file each)."""
    return {
        f"c{i}": [{"role": "user", "content": f"My name is {name}. I always want email receipts {i}."}]
        for i, name in enumerate(PEOPLE)
    }


def test_concurrent_commits_account_for_every_memory(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    people = PEOPLE
    outcomes = asyncio.run(commit_all(ws, six_introductions()))
    profile = (ws.root / "memories/profile.md").read_text()
    assert all(f"My name is {name}" in profile for name in people)
    preferences = "".join(p.read_text() for p in (ws.root / "memories/preferences/default").glob("*.md"))
    assert all(f"receipts {i}" in preferences for i in range(len(people)))
    records = {rid for o in outcomes for rid in o.history_ids}
    assert 1 <= len(records) < len(people)  # batched: fewer records than commits, none lost
    assert all(not o.errors for o in outcomes)


def test_review_switch_parks_user_memories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ws = workspace(tmp_path, "\n[sessions]\nreview_user_memories = true\n")
    peer_line = {"role": "user", "content": "I prefer trains.", "peer_id": "bob"}
    [outcome] = asyncio.run(commit_all(ws, {"s1": [*CONVERSATION, peer_line]}))
    assert not (ws.root / "memories/profile.md").exists()
    assert outcome.peers.routed == {"bob": 1}
    [plan_id] = [p for p in outcome.pending_plans if ws.review.is_waiting(p)]
    pending = ws.review.pending_plan(plan_id)
    # bob's preference waits too, aimed at bob's space; nothing of bob's is written before Review
    [bobs] = [item for item in pending.plan.items if item.peer_id == "bob"]
    assert bobs.memory_type == "preferences" and not (ws.root / "peers").exists()
    assert cli_main(["review", "show", plan_id, "-w", str(ws.root)]) == 0
    assert "preferences/trains (peer bob)" in capsys.readouterr().out  # a person sees whose it is
    assert {item.memory_type for item in pending.plan.items} == {
        "profile",
        "preferences",
        "entities",
        "cases",
    }
    assert outcome.diff.metadata["pending_plans"] == outcome.pending_plans
    # approved in Review, bob's preference is written to bob's space, the user's to the user's
    ws.review.decide_all(plan_id, "approved")
    applied = asyncio.run(ws.review.apply_pending(plan_id))
    assert not applied.item_errors, applied.item_errors
    assert (ws.root / "peers/bob/memories/preferences/bob/trains.md").is_file()
    assert not (ws.root / "memories/preferences/default/trains.md").exists()
    assert (ws.root / "memories/profile.md").is_file()


def _op(content: str, seen: str | None, **fields: Any) -> ExtractedMemory:
    return ExtractedMemory(
        "profile",
        None,
        {"content": content, **fields},
        merge="ops",
        seen=None if seen is None else {"content": seen},
    )


def test_model_operations_merge_in_order_and_a_stale_search_is_an_error(tmp_path: Path) -> None:
    """Two model operations on one profile and an offline line, planned as one batch on the file as it
    is: a SEARCH/REPLACE and a complete text both land; a SEARCH the first edit consumed is reported
    for its memory and left out, not a crash."""
    ws = workspace(tmp_path)
    asyncio.run(commit_all(ws, {"seed": [{"role": "user", "content": "My name is Ana Ruiz."}]}))
    base = parse_memory((ws.root / "memories/profile.md").read_text()).content
    assert base == "- My name is Ana Ruiz"
    updater = StreamingMemoryUpdater(memory_of(ws), plans_of(ws))
    rename = render_blocks([SearchReplace(base, "- The user's name is Ana Ruiz-Marín.")])
    group = [
        _op(rename, base),
        _op(f"{base}\n- The user works as a nurse.", base),  # written against the base: carried over
        _op(rename, base),  # its SEARCH text is gone now
        ExtractedMemory("profile", None, {"content": "- I live in Porto"}),  # offline: a line appended
    ]
    plan, left_out = updater.plan(group)
    [item] = plan.items
    assert str(item.after_content).splitlines() == [
        "- The user's name is Ana Ruiz-Marín.",
        "- The user works as a nurse.",
        "- I live in Porto",
    ]
    [stale] = left_out
    assert stale.memory is group[2] and stale.reason.startswith("block 1: SEARCH text not found")
    assert str(stale).startswith("profile 'profile': block 1") and "left out" in str(stale)
    assert item.base_version is not None  # applied by compare-and-swap against the file planned on


def test_an_add_only_name_taken_twice_keeps_the_first_and_reports_the_other(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    updater = StreamingMemoryUpdater(memory_of(ws), plans_of(ws))

    def event(content: str) -> ExtractedMemory:
        return ExtractedMemory(
            "events", "dentist_visit", {"event_name": "dentist_visit", "content": content}, merge="ops"
        )

    first, again, other = (
        event("On 2026-12-01 the user sees the dentist."),
        event("On 2026-12-01 the user sees the dentist."),
        event("On 2026-12-09 the user sees the dentist again."),
    )
    plan, left_out = updater.plan([first, again, other])
    [item] = plan.items
    assert item.after_content == first.fields["content"] and item.target_name == "dentist_visit"
    [clash] = left_out  # the same text twice is no clash; another text under the same name is
    assert clash.memory is other and "not written over" in clash.reason


def _preference(topic: str) -> ExtractedMemory:
    return ExtractedMemory("preferences", topic, {"topic": topic, "content": f"- I always want {topic}"})


def test_a_batch_is_written_at_max_operations_after_the_wait_and_on_close(tmp_path: Path) -> None:
    """StreamingMemoryUpdater's three triggers while another commit is still extracting (so the
    queue is never idle): the operation count, the wait, and close."""
    ws = workspace(tmp_path)
    history = history_of(ws)

    async def run() -> None:
        by_count = StreamingMemoryUpdater(
            memory_of(ws), plans_of(ws), max_operations=3, max_wait_seconds=3600
        )
        by_count.begin()  # a commit still extracting: nothing is flushed for being idle
        first = asyncio.create_task(by_count.submit([_preference("aisle"), _preference("tea")], "a1"))
        await asyncio.sleep(0)  # let it queue (a yield, not a wait)
        assert not first.done() and history.list() == []
        second = await by_count.submit([_preference("quiet")], "a2")  # 3 operations: written now
        assert second.history_id and (await first).history_id == second.history_id

        by_wait = StreamingMemoryUpdater(
            memory_of(ws), plans_of(ws), max_operations=100, max_wait_seconds=0.05
        )
        by_wait.begin()
        waited = await asyncio.wait_for(by_wait.submit([_preference("window")], "a3"), 30)
        assert waited.history_id and waited.history_id != second.history_id

        by_close = StreamingMemoryUpdater(
            memory_of(ws), plans_of(ws), max_operations=100, max_wait_seconds=3600
        )
        by_close.begin()
        parked = asyncio.create_task(by_close.submit([_preference("vegan")], "a4"))
        await asyncio.sleep(0)
        assert not parked.done()
        await by_close.close()
        assert (await parked).history_id

    asyncio.run(run())
    topics = sorted(p.stem for p in (ws.root / "memories/preferences/default").glob("*.md"))
    assert {"aisle", "tea", "quiet", "window", "vegan"} <= set(topics)
    assert len(history.list()) == 3


def test_a_nul_in_a_tool_argument_is_reported_never_written_as_an_unreadable_file(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    call: dict[str, Any] = {"type": "tool", "tool_id": "c1", "tool_name": "lookup"}
    call |= {"tool_output": '{"status": "ok"}', "tool_status": "completed"}
    call["tool_input"] = {"number": "\x00x", "order_id": "77"}
    conversation: list[dict[str, Any]] = [
        {"role": "user", "content": "Please look up order 77."},
        {"role": "assistant", "parts": [call]},
        {"role": "assistant", "content": "Found it."},
    ]
    [outcome] = asyncio.run(commit_all(ws, {"s1": conversation}))
    assert any("NUL" in error for error in outcome.errors)
    assert (ws.root / "memories/entities/order_id/77.md").is_file()  # the rest of the batch is written
    report = CheckReport()
    check_memories(memory_of(ws), report)
    assert report.ok, report.problems  # no file ovtui cannot read back


def tool_call(**part: Any) -> dict[str, Any]:
    return {"role": "assistant", "parts": [{"type": "tool", "tool_id": "c1", **part}]}


def test_a_failed_call_gives_no_entity(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    conversation = [
        {"role": "user", "content": "Please cancel booking QX77 of customer C-4821."},
        tool_call(
            tool_name="cancel_booking",
            tool_input={"booking_id": "QX77", "customer_id": "C-4821"},
            tool_output="Error: booking not found",
            tool_status="error",
        ),
        tool_call(tool_name="get_customer", tool_input={"customer_id": "C-4821"}, tool_output='{"ok": true}'),
        {"role": "assistant", "content": "I could not find that booking."},
    ]
    [outcome] = asyncio.run(commit_all(ws, {"s1": conversation}))
    assert not outcome.errors, outcome.errors
    entities = {
        p.relative_to(ws.root / "memories/entities").as_posix()
        for p in ws.root.glob("memories/entities/**/*.md")
    }
    assert entities == {"customer_id/c_4821.md"}  # the completed call's value, not the failed one's


def test_a_bare_tool_part_is_no_case(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    conversation = [
        {"role": "user", "content": "Please look up my order."},
        tool_call(tool_name="lookup"),
        {"role": "assistant", "content": "Done."},
    ]
    [outcome] = asyncio.run(commit_all(ws, {"s1": conversation}))
    assert "cases" not in outcome.memories_extracted
    assert not list(ws.root.glob("memories/cases/*.md"))


def test_a_commit_in_a_shared_batch_lists_only_its_own_files(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    outcomes = asyncio.run(commit_all(ws, six_introductions()))
    records = [rid for o in outcomes for rid in o.history_ids]
    assert len(set(records)) < len(records)  # some commits did share a batch
    for i, outcome in enumerate(outcomes):
        listed = {uri.rsplit("memories/", 1)[1] for uri in outcome.diff.operations.uris()}
        preferences = {uri for uri in listed if uri.startswith("preferences/")}
        assert len(preferences) == 1 and f"receipts_{i}" in next(iter(preferences)), listed
        assert listed - preferences == {"profile.md"}


def test_identity_is_made_from_its_fields_starting_from_its_init_values(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    updater = StreamingMemoryUpdater(memory_of(ws), plans_of(ws))

    async def write(fields: dict[str, Any], seen: dict[str, Any] | None = None) -> None:
        await updater.submit([ExtractedMemory("identity", None, fields, merge="ops", seen=seen)], "a1")

    asyncio.run(write({"name": "Wren", "vibe": "calm and exact"}))
    identity = parse_memory((ws.root / "memories/identity.md").read_text())
    # the declared init value where the model gave none; the body made from the fields
    assert (identity.fields["creature"], identity.fields["name"]) == ("AI assistant", "Wren")
    assert "- **Name:** Wren\n- **Creature:** AI assistant\n- **Vibe:** calm and exact" in identity.content
    # the model's edit of the file it was shown: a new vibe replaces the old one
    asyncio.run(write({"name": "Robin", "vibe": "warm"}, {"content": identity.content, **identity.fields}))
    identity = parse_memory((ws.root / "memories/identity.md").read_text())
    assert (identity.fields["name"], identity.fields["vibe"]) == ("Wren", "warm")  # a name, once given, stays
    assert "- **Vibe:** warm" in identity.content
    report = CheckReport()
    check_memories(memory_of(ws), report)
    assert report.problems == [] and report.memory_files["identity"] == 1
