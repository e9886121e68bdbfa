"""One client for any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

What it adds over the ``openai`` package: JSON-schema structured output with fallbacks for
servers that reject a feature (``ovtui.llm.capabilities``: learned from the 400, remembered per
endpoint in the workspace when the client is given a ``CapabilityMemory``), tolerant parsing
plus exactly one format-repair retry, clear errors for refusals and truncated answers, our own
retries with exponential backoff and jitter (Retry-After respected), a concurrency bound, usage
and cost per stage, and an opt-in on-disk response cache. The API key is only ever handed to the
``openai`` client: it is not part of cache keys or entries, and it is scrubbed from every error
message we build.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion

from ovtui.core.api_keys import api_key_from_env
from ovtui.core.config import LLMConfig
from ovtui.core.retry import RetryPolicy
from ovtui.llm.budget import DEFAULT_CONTEXT_WINDOW
from ovtui.llm.cache import ResponseCache, request_key
from ovtui.llm.capabilities import (
    MAX_DROPPED_PARAMS,
    Capabilities,
    CapabilityMemory,
    FormatMode,
    endpoint_key,
)
from ovtui.llm.errors import (
    LLMFormatError,
    LLMRefusalError,
    LLMRequestError,
    LLMTransportError,
    LLMTruncatedError,
)
from ovtui.llm.jsonparse import AnswerFormatError, parse_json_answer, prune, validate
from ovtui.llm.loop_bound import LoopBound
from ovtui.llm.results import (
    ChatReply,
    LLMResult,
    Messages,
    sum_usage,
    tool_call_from,
)
from ovtui.llm.usage import CallUsage, OnCall, UsageTracker

log = logging.getLogger(__name__)

# Local servers (vLLM, Ollama, llama.cpp) accept any key; the openai client insists on one.
PLACEHOLDER_KEY = "sk-local-no-key"


def redact_key(text: str, key: str) -> str:
    """``text`` with the API key ``key`` starred out (a placeholder or a key too short to be one
    is left alone: starring it would garble ordinary words)."""
    if key != PLACEHOLDER_KEY and len(key) >= 6:
        return text.replace(key, "***")
    return text


RETRYABLE_STATUS = {408, 409, 429}
WINDOW_KEYS = ("max_model_len", "context_length", "context_window", "max_context_length")
# Parameters a request cannot do without: never dropped on a server's word.
ESSENTIAL_PARAMS = {"model", "messages"}
UNKNOWN_PARAM_WORDS = re.compile(r"unrecogni[sz]ed|unknown|unsupported|not supported|not permitted|extra")
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
PROBE_MESSAGES: Messages = [{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}]
PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Answers pong.",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": False},
    },
}
REPAIR_PROMPT = (
    "Your previous answer could not be used: {error}\n"
    "Answer again with only one JSON object that matches the schema: no prose, no code fences."
)


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
    return None


def with_schema_in_prompt(messages: Messages, schema: dict[str, Any]) -> Messages:
    """The schema as text at the end of the system message, for endpoints without structured output.

    Where the endpoint accepts ``response_format: json_schema`` the schema travels there only: the
    model sees it once, and the prompt does not pay for it twice.
    """
    text = "Answer with one JSON object matching this JSON schema:\n" + json.dumps(
        schema, ensure_ascii=False, separators=(",", ":")
    )
    if messages and messages[0].get("role") == "system":
        head = messages[0]
        return [{**head, "content": f"{head.get('content') or ''}\n\n{text}"}, *messages[1:]]
    return [{"role": "system", "content": text}, *messages]


def _unknown_param(exc: openai.BadRequestError, text: str, body: dict[str, Any]) -> str | None:
    """The optional parameter of ``body`` a 400 calls unknown or unsupported, if it names one."""
    for param in body.keys() - ESSENTIAL_PARAMS:
        named = exc.param == param or re.search(rf"\b{re.escape(param)}\b", text) is not None
        if named and UNKNOWN_PARAM_WORDS.search(text):
            return param
    return None


def _schema_name(name: str) -> str:
    """OpenAI requires ``^[a-zA-Z0-9_-]{1,64}$`` for the schema name."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64] or "answer"


@dataclass
class _LoopState:
    """What the client uses that is tied to one event loop (``ovtui.llm.loop_bound``)."""

    openai: AsyncOpenAI
    semaphore: asyncio.Semaphore  # the concurrency bound
    recall_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    keep_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    window_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class LLMClient:
    def __init__(
        self,
        config: LLMConfig,
        *,
        cache_dir: Path | None = None,
        usage: UsageTracker | None = None,
        on_call: OnCall | None = None,
        retry: RetryPolicy | None = None,
        http_client: Callable[[], Any] | None = None,
        capability_memory: CapabilityMemory | None = None,
    ) -> None:
        """``http_client``: makes an ``openai.DefaultAioHttpClient()`` (or any client the SDK
        accepts) instead of the SDK's default httpx transport, one per event loop the client is used
        in; aiohttp costs less CPU per call.
        ``capability_memory``: where what the endpoint refused is remembered between runs."""
        self.config = config
        key = api_key_from_env(config.api_key_env, "[llm] api_key_env", required=False)
        self._key = key or PLACEHOLDER_KEY
        self._http_client = http_client
        self._loop_state = LoopBound(self._new_loop_state, lambda state: state.openai.close())
        self.usage = usage or UsageTracker(config.prompt_price_per_mtok, config.completion_price_per_mtok)
        self.on_call = on_call
        self.retry = retry or RetryPolicy()
        self.cache = ResponseCache(cache_dir) if config.cache and cache_dir is not None else None
        # Learned from the server's 400s; recalled from (and kept in) the memory when there is one.
        self.capabilities = Capabilities()
        self._memory = capability_memory
        self._endpoint = endpoint_key(config.base_url, config.model)
        self._recalled = capability_memory is None
        self._unkept = False  # learned something the memory does not hold yet
        self._context_window: int | None = None
        self.window_source = ""

    @property
    def format_mode(self) -> FormatMode:
        return self.capabilities.format_mode

    @property
    def tools_supported(self) -> bool:
        return self.capabilities.tools

    def _new_loop_state(self) -> _LoopState:
        openai_client = AsyncOpenAI(
            base_url=self.config.base_url,
            api_key=self._key,
            timeout=self.config.timeout,
            max_retries=0,
            http_client=self._http_client() if self._http_client is not None else None,
        )
        return _LoopState(openai_client, asyncio.Semaphore(self.config.max_concurrency))

    async def aclose(self) -> None:
        """Close the connections of the running loop (the next call, in any loop, opens new ones)."""
        await self._loop_state.aclose()

    async def __aenter__(self) -> LLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def context_window(self) -> int:
        """The model's context window: what the endpoint reports for it (asked once), else
        ``[llm] context_window``, else the safe default."""
        async with self._loop_state.get().window_lock:
            if self._context_window is None:
                reported = await self._reported_window()
                self._context_window = reported or self.config.context_window or DEFAULT_CONTEXT_WINDOW
                self.capabilities.context_window = reported
                self.window_source = (
                    "reported by the endpoint"
                    if reported
                    else "from [llm] context_window"
                    if self.config.context_window
                    else "the safe default: the endpoint does not say"
                )
                log.info("context window of %s: %d tokens", self.config.model, self._context_window)
            return self._context_window

    async def _reported_window(self) -> int | None:
        """The window ``GET /models`` gives for the model, under the name its server uses (vLLM's
        ``max_model_len``, llama.cpp's ``meta.n_ctx_train``, others' ``context_length``)."""
        try:
            listing = await self._loop_state.get().openai.get("/models", cast_to=object)
        except (openai.APIError, ValueError):
            return None  # not every server lists its models
        entries = listing.get("data") if isinstance(listing, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("id") == self.config.model:
                found = [entry.get(k) for k in WINDOW_KEYS] + [(entry.get("meta") or {}).get("n_ctx_train")]
                sizes = [v for v in found if isinstance(v, int) and not isinstance(v, bool) and v > 0]
                return sizes[0] if sizes else None
        return None

    async def probe(self) -> Capabilities:
        """Ask the endpoint afresh what it supports (a structured answer, then a tool call), and
        remember the answer; what was learned before is forgotten first."""
        self.capabilities = Capabilities()
        self._recalled = True
        self._context_window = None
        await self._call("doctor", PROBE_MESSAGES, PROBE_SCHEMA, "probe", None)
        await self._call("doctor", PROBE_MESSAGES, None, "answer", [PROBE_TOOL])
        await self.context_window()
        self._unkept = True  # the answer is recorded even where the endpoint refused nothing
        await self._keep()
        return self.capabilities

    async def _recall(self) -> None:
        """What this endpoint was found to support before, once per client."""
        async with self._loop_state.get().recall_lock:
            if not self._recalled and self._memory is not None:
                known = await asyncio.to_thread(self._memory.recall, self._endpoint)
                if known is not None:
                    self.capabilities = known
                    log.info("recalled what %s supports: %s", self._endpoint, known)
                self._recalled = True

    async def _keep(self) -> None:
        """Write what was learned to the memory: one write at a time, each of the capabilities as
        they are when it starts. Calls refused together learn the steps of a fallback in turns; were
        their writes free to overlap, a slow write of an earlier step could land after the write of
        a later one and leave the earlier step as the record."""
        if self._memory is None:
            return
        async with self._loop_state.get().keep_lock:
            if not self._unkept:
                return  # nothing new, or a write that just finished holds it
            self._unkept = False
            snapshot = self.capabilities.copy()  # later learning changes the live one in place
            try:
                await asyncio.to_thread(self._memory.remember, self._endpoint, snapshot)
            except BaseException:
                self._unkept = True
                raise

    # --- the public calls ---
    async def complete_json(
        self,
        stage: str,
        messages: Messages,
        schema: dict[str, Any],
        schema_name: str,
        *,
        tools: list[dict[str, Any]] | None = None,
        repair: bool = True,
    ) -> LLMResult:
        """A JSON object matching ``schema``; one repair retry quoting the exact problem (none with
        ``repair=False``: a caller held to one call per item takes the format error instead)."""
        convo = list(messages)
        spent: list[CallUsage] = []
        last = 2 if repair else 1
        for round_ in range(1, last + 1):
            reply = await self.chat(stage, convo, schema=schema, schema_name=schema_name, tools=tools)
            spent.append(reply.usage)
            if reply.refusal:
                raise LLMRefusalError(stage, self.redact(reply.refusal))
            if reply.finish_reason == "length":
                raise LLMTruncatedError(stage, reply.usage.completion_tokens)
            if reply.tool_calls:
                return LLMResult(None, reply.content or "", sum_usage(spent), reply.tool_calls, len(spent))
            try:
                data = prune(parse_json_answer(reply.content), schema)
                problems = validate(data, schema)
                if problems:
                    more = f" (and {len(problems) - 12} more)" if len(problems) > 12 else ""
                    raise AnswerFormatError(
                        "it does not match the schema: " + "; ".join(problems[:12]) + more
                    )
            except AnswerFormatError as exc:
                if round_ == last:
                    raise LLMFormatError(stage, self.redact(str(exc)), reply.content or "") from None
                log.info("[%s] answer unusable (%s); asking once for a corrected one", stage, exc)
                convo += [
                    {"role": "assistant", "content": reply.content or ""},
                    {"role": "user", "content": REPAIR_PROMPT.format(error=exc)},
                ]
                continue
            return LLMResult(data, reply.content or "", sum_usage(spent), [], len(spent))
        raise AssertionError("unreachable")

    async def complete_text(self, stage: str, messages: Messages) -> tuple[str, ChatReply]:
        """Free text (an agent's reply). A refusal is returned as the text: it is the agent's answer."""
        reply = await self.chat(stage, messages)
        return reply.content or reply.refusal or "", reply

    async def chat(
        self,
        stage: str,
        messages: Messages,
        *,
        schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        tools: list[dict[str, Any]] | None = None,
    ) -> ChatReply:
        """One answer: from the cache, or from the endpoint with retries. Usage is recorded."""
        key = None
        if self.cache is not None:
            key = request_key(
                {
                    "base_url": self.config.base_url,
                    "model": self.config.model,
                    "temperature": self.config.temperature,
                    "messages": messages,
                    "schema": schema,
                    "schema_name": schema_name,
                    "tools": tools,
                }
            )
            hit = self.cache.get(key)
            if hit is not None:
                return self._finish(stage, hit, cached=True, attempts=0, latency=0.0)
        started = time.monotonic()
        response, attempts = await self._call(stage, messages, schema, schema_name, tools)
        entry = self._entry(stage, response)
        if self.cache is not None and key is not None:
            self.cache.put(key, stage, self.config.model, entry)
        return self._finish(stage, entry, cached=False, attempts=attempts, latency=time.monotonic() - started)

    # --- internals ---
    def redact(self, text: str) -> str:
        return redact_key(text, self._key)

    def _scrub(self, text: str | None) -> str | None:
        return None if text is None else self.redact(text)

    def _request(
        self,
        messages: Messages,
        schema: dict[str, Any] | None,
        schema_name: str,
        tools: list[dict[str, Any]] | None,
    ) -> dict[str, Any]:
        if schema is not None and self.format_mode != "json_schema":
            messages = with_schema_in_prompt(messages, schema)
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
        }
        if schema is not None and self.format_mode == "json_schema":
            strict = self.capabilities.strict
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": _schema_name(schema_name), "schema": schema, "strict": strict},
            }
        elif schema is not None and self.format_mode == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        if tools and self.tools_supported:
            kwargs["tools"] = tools
        for param in self.capabilities.dropped_params:
            kwargs.pop(param, None)
        return kwargs

    def _downgrade(self, exc: openai.BadRequestError, body: dict[str, Any]) -> bool:
        """Learn from a 400 that names a feature ``body`` asked for; True if the request should be
        resent. What is learned follows what was sent, not what is known now: calls in flight
        together are refused together, and the fallback moves one step, not one step per call."""
        text = f"{exc.message} {exc.param or ''}".lower()
        learned = self.capabilities
        sent_format = (body.get("response_format") or {}).get("type")
        sent_strict = bool(((body.get("response_format") or {}).get("json_schema") or {}).get("strict"))
        if sent_format and ("response_format" in text or "json_schema" in text or "strict" in text):
            if sent_strict and ("strict" in text or "invalid schema" in text):
                if learned.strict:
                    learned.strict = False  # a strict schema is the first thing a server refuses
                    log.warning("endpoint refused a strict schema; sending schemas without strict")
            elif sent_format == self.format_mode:
                learned.format_mode = "json_object" if sent_format == "json_schema" else "text"
                log.warning("endpoint rejected the response format; falling back to %s", self.format_mode)
            return True
        if "tools" in body and "tool" in text:
            if learned.tools:
                learned.tools = False
                log.warning("endpoint rejected tools; tool requests will use the JSON convention")
            return True
        unknown = _unknown_param(exc, text, body)
        if unknown is not None and unknown in learned.dropped_params:
            return True
        if unknown is not None and len(learned.dropped_params) < MAX_DROPPED_PARAMS:
            learned.dropped_params.append(unknown)
            log.warning("endpoint does not know the parameter %r; sending requests without it", unknown)
            return True
        return False

    async def _call(
        self,
        stage: str,
        messages: Messages,
        schema: dict[str, Any] | None,
        schema_name: str,
        tools: list[dict[str, Any]] | None,
    ) -> tuple[ChatCompletion, int]:
        await self._recall()
        try:
            return await self._send(stage, lambda: self._request(messages, schema, schema_name, tools))
        finally:
            # Once a call returns, what it learned is in the memory; the resends did not wait for it.
            await self._keep()

    async def _send(self, stage: str, request: Callable[[], dict[str, Any]]) -> tuple[ChatCompletion, int]:
        """The body ``request`` builds (from what is known of the endpoint at each attempt), resent
        without what the endpoint refuses and retried on transient failures."""
        attempt = 0
        while True:
            attempt += 1
            retry_after: float | None = None
            try:
                state = self._loop_state.get()
                async with state.semaphore:
                    # The documented raw form of ``chat.completions.create``: the SDK's typed-params
                    # transform walks every message and schema and cost ~5 ms of CPU per call.
                    body = request()
                    response = await state.openai.post("/chat/completions", body=body, cast_to=ChatCompletion)
                    return response, attempt
            except openai.BadRequestError as exc:
                known = self.capabilities.copy()
                if self._downgrade(exc, body):
                    self._unkept = self._unkept or self.capabilities != known
                    attempt -= 1  # a capability probe, not a failure
                    continue
                raise LLMRequestError(stage, 400, self.redact(exc.message)) from None
            except openai.APIStatusError as exc:
                status = exc.status_code
                if status not in RETRYABLE_STATUS and status < 500:
                    raise LLMRequestError(stage, status, self.redact(exc.message)) from None
                reason = f"HTTP {status}: {self.redact(exc.message)}"
                retry_after = _retry_after(exc.response.headers)
            except openai.APITimeoutError:
                reason = f"no answer within {self.config.timeout:g} s"
            except openai.APIConnectionError as exc:
                reason = f"connection error: {self.redact(str(exc.__cause__ or exc))}"
            if attempt > self.config.max_retries:
                raise LLMTransportError(stage, attempt, reason)
            delay = self.retry.delay(attempt, retry_after)
            log.info("[%s] attempt %d failed (%s); retrying in %.2f s", stage, attempt, reason, delay)
            await asyncio.sleep(delay)

    def _entry(self, stage: str, response: ChatCompletion) -> dict[str, Any]:
        """The part of a response we keep (and cache): answer, tool calls, finish reason, usage."""
        if not response.choices:
            raise LLMRequestError(stage, None, "the endpoint returned no choices")
        choice = response.choices[0]
        message = choice.message
        calls: list[dict[str, Any]] = []
        for call in message.tool_calls or []:
            function: Any = getattr(call, "function", None)  # we only offer function tools
            if function is not None:
                calls.append({"id": call.id, "name": function.name, "arguments": function.arguments or ""})
        usage = response.usage
        scrub = self._scrub
        return {
            # A model that echoes the key must not get it into the cache, a prompt or a file.
            "content": scrub(message.content),
            "refusal": scrub(getattr(message, "refusal", None)),
            "tool_calls": [{**c, "arguments": scrub(c["arguments"])} for c in calls],
            "finish_reason": choice.finish_reason or "stop",
            "prompt_tokens": usage.prompt_tokens if usage else 0,
            "completion_tokens": usage.completion_tokens if usage else 0,
        }

    def _finish(
        self, stage: str, entry: dict[str, Any], *, cached: bool, attempts: int, latency: float
    ) -> ChatReply:
        prompt, completion = int(entry.get("prompt_tokens") or 0), int(entry.get("completion_tokens") or 0)
        usage = CallUsage(
            stage=stage,
            model=self.config.model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost=0.0 if cached else self.usage.cost_of(prompt, completion),
            cached=cached,
            attempts=attempts,
        )
        self.usage.record(usage, latency)
        if self.on_call is not None:
            try:
                self.on_call(stage, usage, latency)
            except Exception:  # a broken event sink must not fail the call it reports
                log.exception("on_call callback failed for stage %s", stage)
        return ChatReply(
            content=entry.get("content"),
            tool_calls=[tool_call_from(c) for c in entry.get("tool_calls") or []],
            refusal=entry.get("refusal"),
            finish_reason=str(entry.get("finish_reason") or "stop"),
            usage=usage,
            latency=latency,
        )
