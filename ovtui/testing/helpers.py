"""Building blocks for tests of the LLM path: a client wired to the fake server, with tiny backoff."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ovtui.core.config import LLMConfig
from ovtui.core.retry import RetryPolicy
from ovtui.llm.capabilities import CapabilityMemory
from ovtui.llm.client import LLMClient
from ovtui.llm.usage import OnCall

from .openai_server import FakeOpenAIServer

KEY_ENV = "OVTUI_FAKE_TEST_API_KEY"
SECRET_KEY = "sk-ovtui-test-SECRET-4f1c9a"
FAST_RETRY = RetryPolicy(base_delay=0.001, max_delay=0.01, max_retry_after=1.0)


def llm_config(server: FakeOpenAIServer, **overrides: Any) -> LLMConfig:
    values: dict[str, Any] = {
        "backend": "openai",
        "base_url": server.base_url,
        "model": "fake-model",
        "api_key_env": KEY_ENV,
        "timeout": 5.0,
        "max_retries": 2,
        "max_concurrency": 4,
    }
    values.update(overrides)
    return LLMConfig(**values)


def make_client(
    server: FakeOpenAIServer,
    *,
    cache_dir: Path | None = None,
    on_call: OnCall | None = None,
    retry: RetryPolicy = FAST_RETRY,
    capability_memory: CapabilityMemory | None = None,
    **overrides: Any,
) -> LLMClient:
    config = llm_config(server, **overrides)
    return LLMClient(
        config, cache_dir=cache_dir, on_call=on_call, retry=retry, capability_memory=capability_memory
    )


def last_user_text(server: FakeOpenAIServer, request_index: int = -1) -> str:
    messages = server.chat_requests[request_index].messages
    return next(str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user")
