"""ExtractLoop rules, with scripted answers from a real local server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ovtui.llm.client import LLMClient
from ovtui.llm.errors import ExtractError
from ovtui.llm.extract_loop import ExtractLoop
from ovtui.memory.store import MemoryStore
from ovtui.testing.helpers import last_user_text
from ovtui.testing.openai_server import FakeOpenAIServer, Reply

pytest_plugins = ["ovtui.testing.fixtures"]  # the `fake` server and `client` fixtures

EXP = "experiences"
CANCEL = "reservation_cancellation"
REFUND = "refund_status"


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"


def answer(*items: dict[str, Any], **more: Any) -> Reply:
    return Reply.json({EXP: list(items), **more})


def make_loop(client: LLMClient, store: MemoryStore, **kw: Any) -> ExtractLoop:
    return ExtractLoop(client, store, store.registry, [EXP], **kw)


def uri(store: MemoryStore, name: str) -> str:
    return store.uri_for_name(EXP, name)


ADD_REFUND_PATH = block(
    "- Look the reservation up first", "- Look the reservation up first\n- IF refundable THEN say so"
)


async def test_normal_case_is_one_call_with_everything_in_the_prompt(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(answer({"experience_name": CANCEL, "content": ADD_REFUND_PATH, "uri": uri(store, CANCEL)}))
    result = await make_loop(client, store).run(
        "propose", "Improve the experiences.", "THE INPUT", [uri(store, CANCEL)]
    )

    [op] = result.of(EXP)
    assert (op.name, op.uri, op.before is not None) == (CANCEL, uri(store, CANCEL), True)
    assert "- Look the reservation up first\n- IF refundable THEN say so\n## Reflect" in op.content
    assert op.merged["status"] == "production"  # untouched fields keep their values
    assert (result.calls, result.files_read, result.delete_uris) == (1, [uri(store, CANCEL)], [])
    [request] = fake.chat_requests
    system, user = request.messages
    assert system["content"].startswith("Improve the experiences.")
    # The generated schema is sent once, as the response format (not again in the prompt).
    assert '"experience_name":{"type":"string"' not in system["content"]
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert "experience_name" in schema["properties"]["experiences"]["items"]["properties"]
    assert "NEVER cancel before explicit confirmation" in user["content"]
    assert user["content"].endswith("## Input\nTHE INPUT")
    assert [t["function"]["name"] for t in request.body["tools"]] == ["read", "search", "ls"]


async def test_new_file_and_empty_answer(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(answer({"experience_name": "order_tracking", "content": "## Situation\n- where is my order"}))
    [op] = (await make_loop(client, store).run("propose", "i", "x", [])).of(EXP)
    assert (op.before, op.uri, op.content) == (
        None,
        uri(store, "order_tracking"),
        "## Situation\n- where is my order",
    )
    fake.push(Reply.json({}))
    assert (await make_loop(client, store).run("propose", "i", "x", [])).of(EXP) == []


async def test_edit_of_an_unread_file_fetches_it_first(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(
        answer({"experience_name": REFUND, "content": "## Situation\n- rewritten blindly"}),
        answer(
            {
                "experience_name": REFUND,
                "content": block("- ALWAYS give the expected date", "- ALWAYS give the date"),
            }
        ),
    )
    result = await make_loop(client, store).run("propose", "i", "x", [])
    [op] = result.of(EXP)
    assert "- ALWAYS give the date" in op.content and "Find the order, then the refund" in op.content
    assert (result.calls, result.files_read) == (2, [uri(store, REFUND)])
    shown = last_user_text(fake)
    assert shown.startswith("You proposed changes to existing files whose current text you had not seen")
    assert "- Find the order, then the refund" in shown


async def test_unread_file_with_no_round_left_is_an_error(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(answer({"experience_name": REFUND, "content": "blind"}))
    with pytest.raises(ExtractError, match="without having read it"):
        await make_loop(client, store, max_iterations=1).run("propose", "i", "x", [])


async def test_retargeting_is_rejected_never_moved(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    wrong = {"experience_name": CANCEL, "content": "## Situation\n- x", "uri": uri(store, REFUND)}
    fake.push(answer(wrong), answer(wrong))
    with pytest.raises(ExtractError) as info:
        await make_loop(client, store).run("merge", "i", "x", [uri(store, CANCEL), uri(store, REFUND)])
    expected = (
        f"experiences[0]: experience_name '{CANCEL}' designates {uri(store, CANCEL)} "
        f"but uri points at {uri(store, REFUND)}"
    )
    assert expected in str(info.value)
    assert expected in last_user_text(fake)  # the one repair message said exactly this
    assert len(fake.chat_requests) == 2


async def test_retargeting_fixed_in_the_repair_round(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(
        answer({"experience_name": CANCEL, "content": "## Situation\n- a", "uri": uri(store, REFUND)}),
        answer({"experience_name": REFUND, "content": "## Situation\n- a", "uri": uri(store, REFUND)}),
    )
    result = await make_loop(client, store).run("merge", "i", "x", [uri(store, CANCEL), uri(store, REFUND)])
    assert [op.uri for op in result.of(EXP)] == [uri(store, REFUND)]
    assert result.calls == 2


async def test_path_escapes_are_rejected(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    escaping = [
        {"experience_name": "../../etc/passwd", "content": "x"},
        {
            "experience_name": "x",
            "content": "x",
            "uri": "viking://user/default/memories/experiences/../../../etc/x.md",
        },
        {"experience_name": "y", "content": "x", "uri": "viking://user/mallory/memories/experiences/y.md"},
    ]
    fake.push(answer(*escaping), answer(*escaping))
    with pytest.raises(ExtractError) as info:
        await make_loop(client, store).run("propose", "i", "x", [])
    problems = info.value.problems
    assert len(problems) == 3
    assert problems[0] == "experiences[0].experience_name '../../etc/passwd' contains a path separator"
    assert problems[1].startswith("experiences[1].uri: URI") and "'..' or invalid segment" in problems[1]
    assert (
        problems[2].startswith("experiences[2].uri: URI")
        and "is not under 'viking://user/default/'" in problems[2]
    )
    assert not (store.paths.root.parent / "etc").exists()


async def test_patch_repair_once_with_the_exact_reason(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(
        answer({"experience_name": CANCEL, "content": block("- Look it up", "- Look it up twice")}),
        answer({"experience_name": CANCEL, "content": ADD_REFUND_PATH}),
    )
    result = await make_loop(client, store).run("propose", "i", "x", [uri(store, CANCEL)])
    assert "IF refundable THEN say so" in result.of(EXP)[0].content
    assert result.calls == 2
    repair = last_user_text(fake)
    assert repair.startswith("Some operations cannot be applied:")
    assert f"experiences[0] ({CANCEL}) field 'content': block 1: SEARCH text not found" in repair


async def test_patch_repair_happens_only_once(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    ambiguous = block("## ", "## X")
    fake.push(
        answer({"experience_name": CANCEL, "content": ambiguous}),
        answer({"experience_name": CANCEL, "content": ADD_REFUND_PATH + "\n" + ambiguous}),
    )
    with pytest.raises(ExtractError, match=r"block 2: SEARCH text found 3 times"):
        await make_loop(client, store).run("propose", "i", "x", [uri(store, CANCEL)])
    assert "block 1: SEARCH text found 3 times (it must match exactly once): '## '" in last_user_text(fake)
    assert len(fake.chat_requests) == 2


async def test_native_tool_calls_are_run(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(
        Reply.tools(
            ("read", {"uri": uri(store, REFUND)}),
            ("ls", {"memory_type": EXP}),
            ("search", {"query": "refund order", "memory_type": EXP}),
        ),
        answer(
            {"experience_name": REFUND, "content": block("- ALWAYS give the expected date", "- ALWAYS check")}
        ),
    )
    result = await make_loop(client, store).run("propose", "i", "x", [])
    assert "- ALWAYS check" in result.of(EXP)[0].content  # read via the tool: no extra fetch round
    assert (result.calls, result.files_read) == (2, [uri(store, REFUND)])
    messages = fake.chat_requests[1].messages
    assert messages[2]["tool_calls"][0]["function"]["name"] == "read"
    read, ls, search = messages[3:6]
    assert (read["role"], read["tool_call_id"]) == ("tool", "call_1")
    assert "- Find the order, then the refund" in read["content"]
    assert ls["content"].count("viking://") == 3
    assert search["content"].startswith(uri(store, REFUND))


async def test_json_tool_convention_without_function_calling(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.supports_tools = False
    fake.push(
        Reply.json({"tool_calls": [{"name": "read", "arguments": {"uri": uri(store, REFUND)}}]}),
        answer({"experience_name": REFUND, "content": "## Situation\n- new"}),
    )
    result = await make_loop(client, store).run("propose", "i", "x", [])
    assert result.of(EXP)[0].content == "## Situation\n- new"
    assert result.files_read == [uri(store, REFUND)]
    assert ["tools" in r.body for r in fake.chat_requests] == [True, False, False]
    assert 'answer {"tool_calls": [{"name": "read"' in fake.chat_requests[1].messages[0]["content"]
    results = last_user_text(fake)
    assert results.startswith(f'Results of your look-ups:\n### read(uri="{uri(store, REFUND)}")')


async def test_bad_tool_requests_are_answered_not_fatal(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(
        Reply.tools(
            ("read", {"uri": uri(store, "no_such_experience")}),
            ("read", {"uri": "viking://user/default/memories/../../secret.md"}),
            ("read", {"uri": "viking://user/default/ovtui.toml"}),
            ("ls", {"memory_type": "passwords"}),
            ("delete_everything", {}),
        ),
        Reply.json({}),
    )
    await make_loop(client, store).run("propose", "i", "x", [])
    outputs = [m["content"] for m in fake.chat_requests[1].messages if m["role"] == "tool"]
    assert outputs[0] == f"error: there is no file at {uri(store, 'no_such_experience')}"
    assert outputs[1].startswith("error: URI") and "'..'" in outputs[1]
    assert outputs[2].startswith("error:") and "not in a known memory type directory" in outputs[2]
    assert outputs[3].startswith("error: unknown memory type 'passwords'")
    assert outputs[4].startswith("error: unknown tool 'delete_everything'")


async def test_tools_are_not_offered_in_the_last_round(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    fake.push(Reply.tools(("ls", {"memory_type": EXP})), Reply.tools(("ls", {"memory_type": EXP})))
    with pytest.raises(ExtractError, match="still asked for look-ups after 2 round"):
        await make_loop(client, store, max_iterations=2).run("propose", "i", "x", [])
    assert ["tools" in r.body for r in fake.chat_requests] == [True, False]
    assert "tool_calls" not in json.dumps(fake.chat_requests[1].body["response_format"])


async def test_deletes(fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore) -> None:
    extras = {"rationale": {"type": "string"}}
    loop = make_loop(client, store, allow_deletes=True, item_extras=extras)
    fake.push(Reply.json({"deletes": [{"uri": uri(store, "address_change"), "rationale": "superseded"}]}))
    result = await loop.run("merge", "i", "x", [uri(store, "address_change")])
    [delete] = result.deletes
    assert (delete.uri, delete.extras, delete.before.fields["experience_name"]) == (
        uri(store, "address_change"),
        {"rationale": "superseded"},
        "address_change",
    )
    bad = {
        "deletes": [
            {"uri": uri(store, "ghost")},
            {"uri": "viking://user/default/memories/trajectories/cancel_reservation_20261129120000.md"},
        ],
        EXP: [{"experience_name": CANCEL, "content": "x"}, {"experience_name": CANCEL, "content": "y"}],
    }
    fake.push(Reply.json(bad), Reply.json(bad))
    with pytest.raises(ExtractError) as info:
        await loop.run("merge", "i", "x", [uri(store, CANCEL)])
    assert info.value.problems == [
        f"experiences[1]: {uri(store, CANCEL)} is already changed by experiences[0]; "
        "put all changes to one file in one item",
        f"deletes[0]: there is no file at {uri(store, 'ghost')} to delete",
        "deletes[1]: viking://user/default/memories/trajectories/cancel_reservation_20261129120000.md is a "
        "trajectories file, which this step may not delete",
    ]


async def test_add_only_items_never_name_a_file(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    loop = ExtractLoop(client, store, store.registry, ["trajectories"], 1, tools=False)
    item = {"trajectory_name": "cancel_reservation", "content": "## Task", "outcome": "success"}
    fake.push(Reply.json({"trajectories": [item]}))
    [op] = (await loop.run("extract", "i", "x", [])).of("trajectories")
    assert (op.uri, op.name, op.merged["outcome"]) == (None, "cancel_reservation", "success")
    assert "tools" not in fake.chat_requests[0].body
    # A uri is not part of an add-only item: it is dropped, and the item still makes a new file.
    pointed = {
        **item,
        "uri": "viking://user/default/memories/trajectories/cancel_reservation_20261129120000.md",
    }
    fake.push(Reply.json({"trajectories": [pointed]}))
    [op] = (await loop.run("extract", "i", "x", [])).of("trajectories")
    assert (op.uri, op.before) == (None, None)


async def test_user_memory_types_name_their_files_from_their_fields(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    loop = ExtractLoop(client, store, store.registry, ["entities", "profile"], 1, tools=False)
    caroline = {"category": "person", "name": "caroline", "content": "# Caroline"}
    fake.push(Reply.json({"entities": [caroline], "profile": [{"content": "- pilot"}]}))
    result = await loop.run("extract", "i", "x", [])
    [entity], [profile] = result.of("entities"), result.of("profile")
    assert entity.uri == "viking://user/default/memories/entities/person/caroline.md"
    assert profile.uri == "viking://user/default/memories/profile.md"  # one file, no name field
    # An entity without its category names no file: a problem the model is told about, not a crash.
    fake.push(Reply.json({"entities": [{"name": "bob", "content": "# Bob"}]}))
    fake.push(Reply.json({"entities": [{"name": "bob", "category": "person", "content": "# Bob"}]}))
    [bob] = (await loop.run("extract", "i", "x", [])).of("entities")
    assert "'category'" in last_user_text(fake)
    assert bob.uri == "viking://user/default/memories/entities/person/bob.md"
