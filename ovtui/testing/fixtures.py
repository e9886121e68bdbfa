"""Fixtures for tests of the LLM path; conftest files import them
(``from ovtui.testing.fixtures import ...``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from ovtui.llm.client import LLMClient

from .helpers import KEY_ENV, SECRET_KEY, make_client
from .openai_server import FakeOpenAIServer


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """A started fake OpenAI server with an empty script; the API key variable is set."""
    monkeypatch.setenv(KEY_ENV, SECRET_KEY)
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture
async def client(fake: FakeOpenAIServer) -> AsyncIterator[LLMClient]:
    """An LLMClient on ``fake`` with tiny backoff, closed after the test."""
    llm = make_client(fake)
    yield llm
    await llm.aclose()
