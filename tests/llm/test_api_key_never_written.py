"""The API key goes to the endpoint and nowhere else: not the cache, events, logs or errors."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from ovtui.core.errors import LLMError
from ovtui.llm.extract_loop import ExtractLoop
from ovtui.llm.usage import CallUsage
from ovtui.memory.store import MemoryStore
from ovtui.testing.helpers import SECRET_KEY, make_client
from ovtui.testing.openai_server import FakeOpenAIServer, Reply

pytest_plugins = ["ovtui.testing.fixtures"]  # the `fake` server and `client` fixtures

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


async def test_key_is_sent_but_never_written(
    fake: FakeOpenAIServer, store: MemoryStore, tmp_path: Path
) -> None:
    events = tmp_path / "run" / "events.jsonl"
    errors = tmp_path / "run" / "errors.txt"
    events.parent.mkdir()
    handler = logging.FileHandler(tmp_path / "run" / "debug.log", encoding="utf-8")
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)  # the chattiest setting a user could choose

    def on_call(stage: str, usage: CallUsage, latency: float) -> None:
        with events.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"stage": stage, "latency": latency, **usage.to_event()}) + "\n")

    client = make_client(fake, cache_dir=store.paths.state / "llm_cache", cache=True, on_call=on_call)
    fake.push(
        Reply.server_error(),
        Reply.text("not json"),
        Reply.json({"answer": "ok"}),
        Reply(status=401, error=f"Incorrect API key provided: {SECRET_KEY}."),
        Reply.refused(f"I will not repeat {SECRET_KEY}"),
        Reply.json({"experiences": [{"experience_name": "k", "content": "## Situation\n- x"}]}),
    )
    try:
        await client.complete_json("a", [{"role": "user", "content": "json"}], SCHEMA, "s")
        for stage in ("b", "c"):
            with pytest.raises(LLMError) as info:
                await client.complete_json(stage, [{"role": "user", "content": stage}], SCHEMA, "s")
            errors.open("a", encoding="utf-8").write(f"{info.value}\n{info.value!r}\n")
        loop = ExtractLoop(client, store, store.registry, ["experiences"])
        await loop.run("propose", "Write experiences.", "input", [])
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()
        await client.aclose()

    assert all(r.headers["authorization"] == f"Bearer {SECRET_KEY}" for r in fake.chat_requests)
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" and "llm_cache" in p.parts for p in written)
    assert events.read_text(encoding="utf-8").count("\n") == 4  # answered calls; the 401 had no usage
    assert "Incorrect API key provided: ***" in errors.read_text(encoding="utf-8")
    leaks = [p for p in written if SECRET_KEY.encode() in p.read_bytes()]
    assert leaks == [], f"the API key was written to {leaks}"
