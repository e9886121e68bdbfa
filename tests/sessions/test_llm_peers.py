"""The model's view of peers in a session commit (the real ``openai`` client against the fake server,
through the real HTTP session API): a peer's existing files are prefetched and shown as the peer's,
edited in the peer's space by SEARCH/REPLACE with the peer's id (read-before-edit as for the
user's own), never retargeted to another space, and a peer the MemoryPolicy leaves out is invisible —
neither shown nor reachable by the look-up tools."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from llm_session_support import PREFIX, commit, memory, said, served

from ovtui.memory.ledger import UseLedger
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.memory.merge_ops import SearchReplace, render_blocks
from ovtui.storage.paths import WorkspacePaths
from ovtui.testing.openai_server import FakeOpenAIServer, RecordedRequest, Reply
from ovtui.testing.session_model import SessionModel

BOB_TRAINS = "peers/bob/memories/preferences/bob/trains.md"
BOB_LINE = "- Bob prefers trains."
NIGHT_LINE = "- Bob prefers night trains."
BOB_PROFILE = "peers/bob/memories/profile.md"
UNREAD = "whose current text you had not seen"


def answers(*replies: Reply) -> Callable[[RecordedRequest], Reply]:
    """A session's model calls answered in order."""
    queue: Iterator[Reply] = iter(replies)
    return lambda request: next(queue)


def remember(*items: tuple[str, str, str]) -> Callable[[RecordedRequest], Reply]:
    """An answer of preferences (peer, topic, content) and nothing else."""
    prefs = [{"topic": topic, "content": text, "peer_id": peer} for peer, topic, text in items]
    return lambda request: Reply.json({"preferences": prefs})


def to_night_trains(**item: Any) -> Reply:
    patch = render_blocks([SearchReplace(BOB_LINE, NIGHT_LINE)])
    return Reply.json({"preferences": [{"topic": "trains", "content": patch, **item}]})


def requests_of(fake: FakeOpenAIServer, session_id: str) -> list[RecordedRequest]:
    return [r for r in fake.chat_requests if f"(session {session_id})" in r.prompt_text]


def test_a_peers_shown_preference_is_patched_in_the_peers_space(tmp_path: Path) -> None:
    model = SessionModel(
        {
            "b1": lambda request: Reply.json(
                {
                    "profile": [{"content": "- Bob works as a conductor.", "peer_id": "bob"}],
                    "preferences": [{"topic": "trains", "content": BOB_LINE, "peer_id": "bob"}],
                }
            ),
            "b2": lambda request: to_night_trains(peer_id="bob"),
        }
    )
    with served(tmp_path, model) as (client, root, fake):
        assert commit(client, "b1", said("I prefer trains.", "bob"))["status"] == "completed"
        task = commit(client, "b2", said("These days I take the night train.", "bob"))
        [prompt] = [r.prompt_text for r in requests_of(fake, "b2")]
    assert task["status"] == "completed" and task["result"]["errors"] == [], task
    assert task["result"]["token_usage"]["model_calls"] == 1  # shown up front: no look-up round
    whose = 'peer bob\'s file: an edit carries peer_id "bob"'
    assert f"=== FILE {PREFIX}{BOB_TRAINS} (version 1; {whose}) ===" in prompt
    assert f"=== FILE {PREFIX}{BOB_PROFILE} (version 1; {whose}) ===" in prompt  # the peer's profile
    assert "an edit of one must carry that peer_id" in prompt
    # patched where it is: one file, in bob's space, none in the user's
    assert memory(root, BOB_TRAINS).content == NIGHT_LINE
    assert [p.name for p in root.joinpath("peers/bob/memories/preferences/bob").iterdir()] == ["trains.md"]
    assert not root.joinpath("memories/preferences/default/trains.md").exists()
    [history_id] = task["result"]["history_ids"]
    diff = MemoryDiff.model_validate_json((root / f"history/{history_id}/memory_diff.json").read_text())
    assert [op.uri for op in diff.operations.updates] == [PREFIX + BOB_TRAINS] and diff.operations.adds == []
    usage = UseLedger(WorkspacePaths(root)).usage()  # the peer's files shown are uses, as the user's
    assert usage[PREFIX + BOB_TRAINS].count == 1 and usage[PREFIX + BOB_PROFILE].count == 1


def test_an_edit_of_a_peers_file_the_model_did_not_see_gets_the_unread_round(tmp_path: Path) -> None:
    music = "peers/bob/memories/preferences/bob/music.md"
    patch = render_blocks([SearchReplace("- Likes jazz.", "- Likes jazz and blues.")])
    edit = Reply.json({"preferences": [{"topic": "music", "content": patch, "peer_id": "bob"}]})
    model = SessionModel({"j1": remember(("bob", "music", "- Likes jazz.")), "j2": answers(edit, edit)})
    with served(tmp_path, model) as (client, root, fake):
        assert commit(client, "j1", said("Jazz is what I listen to.", "bob"))["status"] == "completed"
        task = commit(client, "j2", said("Blues, please.", "bob"))
        first, second = [r.prompt_text for r in requests_of(fake, "j2")]
    assert task["status"] == "completed" and task["result"]["token_usage"]["model_calls"] == 2, task
    assert f"FILE {PREFIX}{music}" not in first  # nothing in common with the conversation: not prefetched
    assert UNREAD in second and f"=== FILE {PREFIX}{music} (version 1; peer bob's file" in second
    assert memory(root, music).content == "- Likes jazz and blues."


def test_a_peer_the_policy_leaves_out_is_never_shown_nor_reachable(tmp_path: Path) -> None:
    eve_opera = f"{PREFIX}peers/eve/memories/preferences/eve/opera.md"
    eve_text = "- Eve loves opera, above all Verdi."
    look_ups = Reply.tools(
        ("read", {"uri": eve_opera}),
        ("search", {"query": "opera Verdi", "memory_type": "preferences", "peer_id": "eve"}),
        ("ls", {"memory_type": "preferences", "peer_id": "eve"}),
    )
    about_eve = Reply.json(
        {"preferences": [{"topic": "opera", "content": "- Likes opera.", "peer_id": "eve"}]}
    )
    about_bob = Reply.json(
        {"preferences": [{"topic": "opera", "content": "- Bob likes opera.", "peer_id": "bob"}]}
    )
    model = SessionModel(
        {"e1": remember(("eve", "opera", eve_text)), "e2": answers(look_ups, about_eve, about_bob)}
    )
    conversation = [*said("Verdi at the opera tonight?", "eve"), *said("Opera, yes: Verdi.", "bob")]
    with served(tmp_path, model) as (client, root, fake):
        assert commit(client, "e1", said("I love opera.", "eve"))["status"] == "completed"
        eve_before = sorted(p.read_text() for p in root.joinpath("peers/eve").rglob("*.md"))
        policy = {"peer": {"allowed_peer_ids": ["bob"]}}
        task = commit(client, "e2", conversation, memory_policy=policy)
        requests = requests_of(fake, "e2")
    assert task["status"] == "completed" and task["result"]["token_usage"]["model_calls"] == 3, task
    sent = [json.dumps(r.body) for r in requests]
    assert not any("Verdi" in s and "above all" in s for s in sent)  # eve's file never left the workspace
    assert not any(f"FILE {PREFIX}peers/eve" in r.prompt_text for r in requests)
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in requests[0].body["tools"]}
    assert tools["search"]["properties"]["peer_id"]["enum"] == ["bob"]
    outputs = [m["content"] for m in requests[1].messages if m["role"] == "tool"]
    assert outputs == [
        f"error: {eve_opera} is not in the user's memories or those of a peer in this conversation",
        "error: there is no peer 'eve' in this conversation; the peers are bob",
        "error: there is no peer 'eve' in this conversation; the peers are bob",
    ]
    assert "'eve' is not one of ['bob']" in requests[2].prompt_text  # the answer schema's enum
    assert memory(root, "peers/bob/memories/preferences/bob/opera.md").content == "- Bob likes opera."
    assert sorted(p.read_text() for p in root.joinpath("peers/eve").rglob("*.md")) == eve_before


def test_a_uri_in_another_space_than_the_peer_id_gets_the_repair_message(tmp_path: Path) -> None:
    in_bobs_space = to_night_trains(uri=PREFIX + BOB_TRAINS)  # bob's file, but no peer_id: the user's
    model = SessionModel(
        {
            "x1": remember(("bob", "trains", BOB_LINE)),
            "x2": answers(in_bobs_space, to_night_trains(peer_id="bob")),
        }
    )
    with served(tmp_path, model) as (client, root, fake):
        assert commit(client, "x1", said("I prefer trains.", "bob"))["status"] == "completed"
        task = commit(client, "x2", said("Night trains now.", "bob"))
        _first, repair = [r.prompt_text for r in requests_of(fake, "x2")]
    assert task["status"] == "completed", task
    assert (
        f"preferences[0]: uri {PREFIX}{BOB_TRAINS} is in peer bob's space but peer_id designates the "
        f"user's own space ({PREFIX}memories/preferences/default/trains.md)"
    ) in repair
    assert memory(root, BOB_TRAINS).content == NIGHT_LINE
    assert not root.joinpath("memories/preferences/default/trains.md").exists()
