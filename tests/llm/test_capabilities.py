"""The endpoint record: read back as written, a damaged file or record costs a relearning (never
the run), concurrent refusals move the fallback one step, and the record ends with the last step
however slowly the disk writes."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from ovtui.llm.capabilities import Capabilities, CapabilityMemory
from ovtui.storage.paths import ENDPOINTS_FILE
from ovtui.testing.helpers import make_client
from ovtui.testing.openai_server import FakeOpenAIServer, RecordedRequest, Reply

pytest_plugins = ["ovtui.testing.fixtures"]

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


def test_what_is_remembered_is_recalled(tmp_path: Path) -> None:
    memory = CapabilityMemory(tmp_path)
    learned = Capabilities("text", strict=False, tools=False, dropped_params=["seed"])
    memory.remember("http://a/v1 m", learned)
    memory.remember("http://b/v1 m", Capabilities())
    assert CapabilityMemory(tmp_path).recall("http://a/v1 m") == learned
    assert memory.recall("http://c/v1 m") is None


@pytest.mark.parametrize(
    "text", ["{not json", '{"endpoints": {"http://a/v1 m": {"format_mode": "xml"}}}', "[]"]
)
def test_a_damaged_record_is_learned_again(tmp_path: Path, text: str) -> None:
    (tmp_path / ENDPOINTS_FILE).parent.mkdir(parents=True)
    (tmp_path / ENDPOINTS_FILE).write_text(text)
    memory = CapabilityMemory(tmp_path)
    assert memory.recall("http://a/v1 m") is None
    memory.remember("http://a/v1 m", Capabilities(tools=False))
    assert memory.recall("http://a/v1 m") == Capabilities(tools=False)


async def test_calls_refused_together_step_down_once(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    fake.supports_json_schema = False
    fake.respond_with(lambda request: Reply.json({"ok": True}))
    client = make_client(fake, capability_memory=CapabilityMemory(tmp_path))
    messages = [{"role": "user", "content": "ok?"}]
    await asyncio.gather(*(client.complete_json("s", messages, SCHEMA, "ok") for _ in range(6)))
    await client.aclose()
    assert client.format_mode == "json_object"  # not "text": six refusals of json_schema are one fact
    assert {r.response_format_type for r in fake.refused_requests} == {"json_schema"}
    assert CapabilityMemory(tmp_path).recall(f"{fake.base_url} fake-model") == client.capabilities


class FirstWriteOvertaken(CapabilityMemory):
    """A disk whose first write is slow: it lands only once ``overtaken`` is set (the timeout only
    turns a client that waits for this write into a failed test rather than a hung one)."""

    def __init__(self, root: Path, overtaken: threading.Event) -> None:
        super().__init__(root)
        self.overtaken = overtaken
        self.writes = 0

    def remember(self, key: str, capabilities: Capabilities) -> None:
        handed = replace(capabilities, dropped_params=list(capabilities.dropped_params))
        self.writes += 1
        if self.writes == 1:
            self.overtaken.wait(timeout=10)
        super().remember(key, handed)


async def test_a_slow_write_of_an_earlier_step_is_not_the_record(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    """Two calls fall back json_schema → json_object → text; the first write of the record is still
    on its way when the endpoint is asked in text mode. The record must say text: a run that leaves
    json_object behind pays a refused call on every run after it."""
    fake.supports_json_schema = fake.supports_json_object = False
    asked_in_text = threading.Event()

    def answer(request: RecordedRequest) -> Reply:
        if request.response_format_type is None:
            asked_in_text.set()
        return Reply.json({"ok": True})

    fake.respond_with(answer)
    memory = FirstWriteOvertaken(tmp_path, asked_in_text)
    client = make_client(fake, capability_memory=memory)
    messages = [{"role": "user", "content": "ok?"}]
    await asyncio.gather(*(client.complete_json("s", messages, SCHEMA, "ok") for _ in range(2)))
    await client.aclose()
    assert client.format_mode == "text"
    assert CapabilityMemory(tmp_path).recall(f"{fake.base_url} fake-model") == client.capabilities
