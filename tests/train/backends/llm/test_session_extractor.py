"""The model's session extraction on its own (the real client against the fake server): the types it is
asked for follow the MemoryPolicy, a peer id is offered only for the peers allowed and passed through,
and a policy that allows nothing costs no call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workspace_support import build_sample_workspace, memory_of

from ovtui.protocols.sessions import AddMessageRequest, MemoryPolicy, SessionMessage
from ovtui.testing.helpers import make_client
from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.train.backends.llm.session_extractor import LLMSessionExtractor
from ovtui.wiring.workspace import Workspace

pytest_plugins = ["ovtui.testing.fixtures"]


def messages(*said: tuple[str, str | None]) -> list[SessionMessage]:
    return [
        AddMessageRequest.model_validate({"role": "user", "content": text, "peer_id": peer}).to_stored(
            f"m{i}"
        )
        for i, (text, peer) in enumerate(said)
    ]


def asked_schema(fake: FakeOpenAIServer) -> dict[str, Any]:
    schema: dict[str, Any] = fake.chat_requests[-1].body["response_format"]["json_schema"]["schema"]
    return schema


async def test_types_follow_the_policy_and_peer_ids_pass_through(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    store = memory_of(Workspace(build_sample_workspace(tmp_path / "ws")))
    client = make_client(fake)
    extractor = LLMSessionExtractor(client, store)
    fake.push(
        Reply.json(
            {
                "preferences": [
                    {"topic": "trains", "content": "- Bob prefers trains.", "peer_id": "bob"},
                    {"topic": "seating", "content": "- The user prefers window seats."},
                ]
            }
        )
    )
    policy = MemoryPolicy.model_validate(
        {"peer": {"allowed_peer_ids": ["bob"]}, "memory_types": ["preferences", "profile"]}
    )
    said = messages(("I prefer trains.", "bob"), ("I like boats.", "eve"), ("Window seats, please.", None))
    extraction = await extractor.extract(said, "s1", "archive_001", policy)
    await client.aclose()

    properties = asked_schema(fake)["properties"]
    assert {"profile", "preferences"} <= set(properties) and not {"entities", "events", "cases"} & set(
        properties
    )
    peer = properties["preferences"]["items"]["properties"]["peer_id"]
    assert peer["enum"] == ["bob"]  # eve spoke, but the policy does not allow her
    assert "#0" in fake.chat_requests[-1].prompt_text and "(peer bob)" in fake.chat_requests[-1].prompt_text
    by_topic = {m.name: m for m in extraction.memories}
    assert by_topic["trains"].peer_id == "bob" and by_topic["trains"].merge == "ops"
    assert by_topic["seating"].peer_id is None
    assert extraction.model_calls == 1 and extraction.prompt_tokens > 0


async def test_a_policy_that_allows_nothing_costs_no_call(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    store = memory_of(Workspace(build_sample_workspace(tmp_path / "ws")))
    client = make_client(fake)
    nothing = MemoryPolicy.model_validate({"self": {"enabled": False}, "peer": {"enabled": False}})
    extraction = await LLMSessionExtractor(client, store).extract(
        messages(("My name is Ana.", None)), "s1", "archive_001", nothing
    )
    await client.aclose()
    assert extraction.memories == [] and extraction.model_calls == 0 and fake.chat_requests == []
