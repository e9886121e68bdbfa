"""Opt-in: the client and the extract loop against a real OpenAI-compatible endpoint.

Run with ``OVTUI_TEST_BASE_URL=http://127.0.0.1:8000/v1 OVTUI_TEST_MODEL=... pytest tests/llm``
(the key, if the endpoint needs one, in ``OVTUI_TEST_API_KEY``).
"""

from __future__ import annotations

import os

import pytest

from ovtui.core.config import LLMConfig
from ovtui.llm.client import LLMClient
from ovtui.llm.extract_loop import ExtractLoop
from ovtui.memory.store import MemoryStore

BASE_URL = os.environ.get("OVTUI_TEST_BASE_URL")
pytestmark = pytest.mark.skipif(not BASE_URL, reason="set OVTUI_TEST_BASE_URL to test a real endpoint")


def real_client() -> LLMClient:
    config = LLMConfig(
        backend="openai",
        base_url=BASE_URL or "",
        model=os.environ.get("OVTUI_TEST_MODEL", "gpt-4o-mini"),
        api_key_env="OVTUI_TEST_API_KEY",
        timeout=120,
        max_concurrency=2,
    )
    return LLMClient(config)


async def test_real_endpoint_answers_json() -> None:
    client = real_client()
    schema = {
        "type": "object",
        "properties": {"capital": {"type": "string"}},
        "required": ["capital"],
        "additionalProperties": False,
    }
    messages = [
        {"role": "user", "content": 'What is the capital of France? Answer as JSON {"capital": ...}.'}
    ]
    try:
        result = await client.complete_json("probe", messages, schema, "capital")
    finally:
        await client.aclose()
    assert "paris" in str(result.data["capital"]).lower()  # type: ignore[index]
    assert client.usage.stage("probe").calls >= 1


async def test_real_endpoint_extracts_an_experience(store: MemoryStore) -> None:
    client = real_client()
    loop = ExtractLoop(client, store, store.registry, ["experiences"], max_iterations=2)
    uri = store.uri_for_name("experiences", "reservation_cancellation")
    try:
        result = await loop.run(
            "propose",
            "Update the experience from the lesson in the input. Use SEARCH/REPLACE blocks for the edit.",
            "Lesson: before cancelling, ALWAYS tell the customer whether the booking is refundable.",
            [uri],
        )
    finally:
        await client.aclose()
    ops = result.of("experiences")
    assert ops, "the model proposed nothing"
    assert all(op.name for op in ops)
