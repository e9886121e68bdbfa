"""LLMClient against a real local HTTP server, through the official openai client."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import openai
import pytest

from ovtui.core.retry import RetryPolicy
from ovtui.llm.client import LLMClient
from ovtui.llm.errors import (
    LLMFormatError,
    LLMRefusalError,
    LLMRequestError,
    LLMTransportError,
    LLMTruncatedError,
)
from ovtui.llm.usage import CallUsage
from ovtui.testing.helpers import FAST_RETRY, last_user_text, llm_config, make_client
from ovtui.testing.openai_server import FakeOpenAIServer, Reply

pytest_plugins = ["ovtui.testing.fixtures"]  # the `fake` server and `client` fixtures

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "score": {"type": "number"}},
    "required": ["answer"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "hello"}]


async def ask(client: LLMClient, stage: str = "extract") -> Any:
    return await client.complete_json(stage, MESSAGES, SCHEMA, "greeting")


async def test_structured_output_request_and_result(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.push(Reply.json({"answer": "hi", "score": 1}, usage=(120, 7)))
    result = await ask(client)
    assert result.data == {"answer": "hi", "score": 1}
    assert result.raw == '{"answer": "hi", "score": 1}'
    assert (result.usage.prompt_tokens, result.usage.completion_tokens, result.calls) == (120, 7, 1)
    [request] = fake.chat_requests
    assert request.body["model"] == "fake-model"
    assert request.body["temperature"] == 0.0
    assert request.body["messages"] == MESSAGES
    assert request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "greeting", "schema": SCHEMA, "strict": True},
    }
    assert request.headers["x-stainless-retry-count"] == "0"  # the SDK's own retries are off


async def test_response_format_fallback_is_learned_once(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.supports_json_schema = False
    fake.supports_json_object = False
    fake.push(Reply.json({"answer": "a"}), Reply.json({"answer": "b"}))
    assert (await ask(client)).data == {"answer": "a"}
    assert (await ask(client)).data == {"answer": "b"}
    kinds = [r.response_format_type for r in fake.chat_requests]
    assert kinds == ["json_schema", "json_object", None, None]
    assert client.format_mode == "text"
    assert "greeting" not in str(fake.chat_requests[-1].body.get("response_format"))
    # The schema is sent once: as the response format where accepted, in the prompt otherwise.
    first, *fallbacks = fake.chat_requests
    assert first.messages == MESSAGES
    for request in fallbacks:
        system = request.messages[0]["content"]
        assert system.startswith("Answer in JSON.") and '"required":["answer"]' in system


async def test_tools_fallback_is_learned(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.supports_tools = False
    fake.push(Reply.json({"answer": "a"}))
    tools = [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}]
    await client.complete_json("s", MESSAGES, SCHEMA, "x", tools=tools)
    assert ["tools" in r.body for r in fake.chat_requests] == [True, False]
    assert client.tools_supported is False


async def test_almost_json_needs_no_repair(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.push(Reply.text('```json\n{"answer": \'hi\', "comment": "extra",}\n```'))
    result = await ask(client)
    assert result.data == {"answer": "hi"}
    assert len(fake.chat_requests) == 1


async def test_non_json_answer_gets_one_repair_with_the_reason(
    fake: FakeOpenAIServer, client: LLMClient
) -> None:
    fake.push(Reply.text("Sure, happy to help!"), Reply.json({"answer": "fixed"}))
    result = await ask(client)
    assert result.data == {"answer": "fixed"}
    assert result.calls == 2
    repair = last_user_text(fake)
    assert "contains no JSON object" in repair
    assert fake.chat_requests[1].messages[-2] == {"role": "assistant", "content": "Sure, happy to help!"}


async def test_schema_violation_gets_one_repair_naming_the_field(
    fake: FakeOpenAIServer, client: LLMClient
) -> None:
    fake.push(Reply.json({"score": "high"}), Reply.json({"answer": "ok", "score": 0.5}))
    assert (await ask(client)).data == {"answer": "ok", "score": 0.5}
    repair = last_user_text(fake)
    assert "$: required field 'answer' is missing" in repair
    assert "$.score: expected number, got string" in repair


async def test_second_bad_answer_is_a_clear_format_error(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.push(Reply.text("No."), Reply.text("Still no."))
    with pytest.raises(LLMFormatError) as info:
        await ask(client, "merge")
    message = str(info.value)
    assert message.startswith(
        "[merge] unusable answer after one repair retry (prose instead of JSON: a refusal?)"
    )
    assert "'Still no.'" in message
    assert len(fake.chat_requests) == 2


async def test_refusal_is_an_error_without_retry(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.push(Reply.refused("I can't help with that request."))
    with pytest.raises(LLMRefusalError, match=r"\[propose\] the model refused: I can't help"):
        await ask(client, "propose")
    assert len(fake.chat_requests) == 1


async def test_truncated_answer_is_an_error_without_retry(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.push(Reply.truncated('{"answer": "a very long', usage=(50, 4096)))
    with pytest.raises(LLMTruncatedError, match="cut off after 4096 completion tokens"):
        await ask(client)
    assert len(fake.chat_requests) == 1
    assert client.usage.stage("extract").completion_tokens == 4096  # the tokens were still spent


async def test_429_honours_retry_after(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.push(Reply.rate_limited(retry_after="0.3"), Reply.json({"answer": "ok"}))
    started = time.monotonic()
    result = await ask(client)
    assert result.data == {"answer": "ok"}
    assert result.usage.attempts == 2
    gap = fake.chat_requests[1].started - fake.chat_requests[0].finished
    assert gap >= 0.25, "the client waited less than Retry-After"
    assert time.monotonic() - started < 3


async def test_retry_after_is_capped(fake: FakeOpenAIServer) -> None:
    client = make_client(fake, retry=RetryPolicy(base_delay=0.001, max_retry_after=0.01))
    fake.push(Reply.rate_limited(retry_after="3600"), Reply.json({"answer": "ok"}))
    started = time.monotonic()
    assert (await ask(client)).data == {"answer": "ok"}
    assert time.monotonic() - started < 2
    await client.aclose()


async def test_server_errors_are_retried_then_reported(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.push(Reply.server_error(), Reply.server_error(503), Reply.json({"answer": "ok"}))
    assert (await ask(client)).data == {"answer": "ok"}
    fake.push(*[Reply.server_error()] * 3)
    with pytest.raises(
        LLMTransportError, match=r"\[extract\] the model endpoint failed after 3 attempt\(s\): HTTP 500"
    ):
        await ask(client)
    assert len(fake.chat_requests) == 6


async def test_timeout_is_retried(fake: FakeOpenAIServer) -> None:
    client = make_client(fake, timeout=0.3)
    fake.push(Reply.hang(3.0), Reply.json({"answer": "late but fine"}))
    assert (await ask(client)).data == {"answer": "late but fine"}
    fake.push(Reply.hang(3.0), Reply.hang(3.0), Reply.hang(3.0))
    with pytest.raises(LLMTransportError, match=r"no answer within 0\.3 s"):
        await ask(client)
    await client.aclose()


async def test_dropped_connection_is_retried(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.push(Reply.dropped(), Reply.json({"answer": "ok"}))
    assert (await ask(client)).data == {"answer": "ok"}
    assert len(fake.chat_requests) == 2


async def test_client_errors_are_not_retried(fake: FakeOpenAIServer, client: LLMClient) -> None:
    fake.push(Reply(status=401, error="Incorrect API key provided"))
    with pytest.raises(LLMRequestError, match=r"rejected the request \(401\): .*Incorrect API key"):
        await ask(client)
    fake.push(Reply.bad_request("messages[1].content is too long"))
    with pytest.raises(LLMRequestError, match=r"\(400\)"):
        await ask(client)
    assert len(fake.chat_requests) == 2


async def test_concurrency_is_bounded_by_the_semaphore(fake: FakeOpenAIServer) -> None:
    client = make_client(fake, max_concurrency=3)
    fake.latency = 0.05
    fake.respond_with(lambda request: Reply.json({"answer": "ok"}))
    results = await asyncio.gather(*(ask(client) for _ in range(12)))
    assert len(results) == 12
    assert fake.max_in_flight == 3
    await client.aclose()


def test_one_client_serves_one_event_loop_after_another_each_within_its_bound(fake: FakeOpenAIServer) -> None:
    """A client kept across ``asyncio.run`` calls: each loop gets its own connections and its own
    concurrency bound (the first loop's would fail in the next), whether or not it was closed."""
    client = make_client(fake, max_concurrency=2)
    fake.latency = 0.05
    fake.respond_with(lambda request: Reply.json({"answer": "ok"}))

    async def six(close: bool) -> int:
        results = await asyncio.gather(*(ask(client) for _ in range(6)))
        if close:
            await client.aclose()
        return len(results)

    assert [asyncio.run(six(close)) for close in (False, False, True, True)] == [6, 6, 6, 6]
    assert len(fake.chat_requests) == 24 and fake.max_in_flight == 2


async def test_usage_and_cost_per_stage_and_events(fake: FakeOpenAIServer) -> None:
    events: list[tuple[str, CallUsage, float]] = []
    client = make_client(
        fake,
        on_call=lambda stage, usage, latency: events.append((stage, usage, latency)),
        prompt_price_per_mtok=2.0,
        completion_price_per_mtok=10.0,
    )
    fake.push(
        Reply.json({"answer": "a"}, usage=(1000, 100)),
        Reply.text("nope", usage=(500, 10)),
        Reply.json({"answer": "b"}, usage=(600, 20)),
        Reply.json({"answer": "c"}, usage=(3000, 300)),
    )
    await ask(client, "extract")
    await ask(client, "extract")  # repaired: two calls
    await ask(client, "merge")
    extract, merge = client.usage.stage("extract"), client.usage.stage("merge")
    assert (extract.calls, extract.prompt_tokens, extract.completion_tokens) == (3, 2100, 130)
    assert extract.cost == pytest.approx((2100 * 2 + 130 * 10) / 1e6)
    assert (merge.calls, merge.total_tokens) == (1, 3300)
    assert client.usage.total.calls == 4
    assert client.usage.snapshot()["total"]["prompt_tokens"] == 5100
    assert [stage for stage, _, _ in events] == ["extract", "extract", "extract", "merge"]
    assert all(latency >= 0 for _, _, latency in events)
    await client.aclose()


async def test_cache_replays_a_run_without_http(fake: FakeOpenAIServer, tmp_path: Any) -> None:
    cache = tmp_path / ".ovtui" / "llm_cache"
    fake.push(Reply.text("not json"), Reply.json({"answer": "one"}), Reply.json({"answer": "two"}))
    first = make_client(fake, cache_dir=cache, cache=True)

    async def run(client: LLMClient) -> list[Any]:
        other = [{"role": "user", "content": "another question"}]
        return [
            (await ask(client, "extract")).data,
            (await client.complete_json("merge", other, SCHEMA, "g")).data,
        ]

    run1 = await run(first)
    await first.aclose()
    sent = len(fake.chat_requests)
    assert sent == 3

    second = make_client(fake, cache_dir=cache, cache=True)
    run2 = await run(second)
    assert run2 == run1 == [{"answer": "one"}, {"answer": "two"}]
    assert len(fake.chat_requests) == sent, "a cached replay must not reach the server"
    usage = second.usage.stage("extract")
    assert (usage.calls, usage.cached_calls, usage.prompt_tokens, usage.cost) == (2, 2, 0, 0.0)
    assert len(list(cache.rglob("*.json"))) == 3
    await second.aclose()


async def test_cache_is_off_by_default_and_keys_on_the_request(fake: FakeOpenAIServer, tmp_path: Any) -> None:
    cache = tmp_path / "cache"
    fake.respond_with(lambda request: Reply.json({"answer": str(len(request.messages))}))
    off = make_client(fake, cache_dir=cache)
    await ask(off)
    assert not cache.exists()
    on = make_client(fake, cache_dir=cache, cache=True)
    await ask(on)
    await on.complete_json("extract", [*MESSAGES, {"role": "user", "content": "more"}], SCHEMA, "greeting")
    hotter = make_client(fake, cache_dir=cache, cache=True, temperature=0.7)
    await ask(hotter)
    assert len(fake.chat_requests) == 4  # different messages or temperature: no hit
    for c in (off, on, hotter):
        await c.aclose()


async def test_damaged_cache_entry_is_a_miss(fake: FakeOpenAIServer, tmp_path: Any) -> None:
    cache = tmp_path / "cache"
    fake.respond_with(lambda request: Reply.json({"answer": "x"}))
    client = make_client(fake, cache_dir=cache, cache=True)
    await ask(client)
    for entry in cache.rglob("*.json"):
        entry.write_text("{broken", encoding="utf-8")
    await ask(client)
    assert len(fake.chat_requests) == 2
    await client.aclose()


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 5.0)]:
        delays = [policy.delay(attempt, None) for _ in range(50)]
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(set(delays)) > 1
    assert policy.delay(1, 2.5) == 2.5
    assert FAST_RETRY.delay(1, 30.0) == 1.0


async def test_a_failing_event_sink_does_not_fail_the_call(fake: FakeOpenAIServer) -> None:
    def broken(stage: str, usage: CallUsage, latency: float) -> None:
        raise RuntimeError("disk full")

    client = make_client(fake, on_call=broken)
    fake.push(Reply.json({"answer": "ok"}))
    assert (await ask(client)).data == {"answer": "ok"}
    await client.aclose()


async def test_aiohttp_transport_maps_failures_the_same_way(fake: FakeOpenAIServer) -> None:
    client = LLMClient(
        llm_config(fake, timeout=0.3, max_retries=4),
        retry=FAST_RETRY,
        http_client=openai.DefaultAioHttpClient,
    )
    fake.push(
        Reply.dropped(),
        Reply.hang(3.0),
        Reply.rate_limited(retry_after="0"),
        Reply.server_error(),
        Reply.json({"answer": "ok"}),
    )
    assert (await ask(client)).data == {"answer": "ok"}
    assert len(fake.chat_requests) == 5
    fake.push(Reply(status=401, error="bad key"))
    with pytest.raises(LLMRequestError, match=r"\(401\)"):
        await ask(client)
    await client.aclose()
