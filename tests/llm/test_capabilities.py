"""The endpoint record: read back as written, a damaged file or record costs a relearning (never
the run), and concurrent refusals move the fallback one step."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ovtui.llm.capabilities import Capabilities, CapabilityMemory
from ovtui.storage.paths import ENDPOINTS_FILE
from ovtui.testing.helpers import make_client
from ovtui.testing.openai_server import FakeOpenAIServer, Reply

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
