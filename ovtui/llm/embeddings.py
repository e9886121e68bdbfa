"""Dense vectors from any OpenAI-compatible ``POST /v1/embeddings`` endpoint (OpenAI, vLLM, Ollama,
llama.cpp, TEI): the ``Embedder`` of ``[embedding]``.

Texts go in batches of ``[embedding] batch``; the vectors come back in the order of the texts
(the answer's ``index`` says which is which). ``encoding_format`` base64 (little-endian float32,
a third of the bytes of JSON floats) or float, as the endpoint supports. The openai SDK retries
connection errors, 408/409/429 and 5xx with backoff (honouring Retry-After); what still fails is
one ``EmbeddingError`` line naming the endpoint, with the API key scrubbed.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from collections.abc import Callable
from typing import Any

import openai
from openai import AsyncOpenAI

from ovtui.core.api_keys import api_key_from_env
from ovtui.core.config import EmbeddingConfig
from ovtui.core.errors import OvtuiError
from ovtui.llm.client import PLACEHOLDER_KEY, redact_key
from ovtui.llm.loop_bound import LoopBound


class EmbeddingError(OvtuiError):
    """The endpoint could not give the vectors (down, refused, an answer of another shape)."""


def decode_vector(value: Any) -> list[float]:
    """One ``embedding`` of an answer: a JSON list of numbers, or base64 of little-endian float32."""
    if isinstance(value, str):
        raw = base64.b64decode(value)
        if len(raw) % 4:
            raise ValueError(f"a base64 vector of {len(raw)} bytes is not float32")
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    if isinstance(value, list) and all(isinstance(x, int | float) and not isinstance(x, bool) for x in value):
        return [float(x) for x in value]
    raise ValueError(f"an embedding must be a list of numbers or base64, not {type(value).__name__}")


class OpenAIEmbedder:
    def __init__(self, config: EmbeddingConfig, *, http_client: Callable[[], Any] | None = None) -> None:
        self.config = config
        key = api_key_from_env(config.api_key_env, "[embedding] api_key_env", required=False)
        self._key = key or PLACEHOLDER_KEY
        self._http_client = http_client
        self._openai = LoopBound(self._new_openai, lambda client: client.close())
        named = f"{config.base_url}\n{config.model}\n{config.dimensions}"
        self._space = hashlib.sha256(named.encode()).hexdigest()[:16]

    @property
    def space(self) -> str:
        return self._space

    def _new_openai(self) -> AsyncOpenAI:
        return AsyncOpenAI(
            base_url=self.config.base_url,
            api_key=self._key,
            timeout=self.config.timeout,
            max_retries=self.config.max_retries,
            http_client=self._http_client() if self._http_client is not None else None,
        )

    async def aclose(self) -> None:
        """Close the connections of the running loop (the next call, in any loop, opens new ones)."""
        await self._openai.aclose()

    def _scrub(self, text: str) -> str:
        return redact_key(text, self._key)

    async def embed(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.config.batch):
            vectors += await self._batch(texts[start : start + self.config.batch])
        return vectors

    async def _batch(self, texts: list[str]) -> list[list[float]]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "input": texts,
            "encoding_format": self.config.encoding_format,
        }
        if self.config.dimensions is not None:
            body["dimensions"] = self.config.dimensions
        where = f"[embedding] {self.config.base_url} ({self.config.model})"
        try:
            answer = await self._openai.get().post("/embeddings", body=body, cast_to=object)
        except openai.APIStatusError as exc:
            raise EmbeddingError(f"{where}: HTTP {exc.status_code}: {self._scrub(exc.message)}") from None
        except openai.APIError as exc:  # timeouts and connection errors, after the retries
            raise EmbeddingError(f"{where}: {self._scrub(str(exc))}") from None
        try:
            items = sorted(answer["data"], key=lambda item: int(item["index"]))  # type: ignore[index]
            vectors = [decode_vector(item["embedding"]) for item in items]
        except (KeyError, TypeError, ValueError) as exc:
            raise EmbeddingError(f"{where}: not an embeddings answer ({exc})") from None
        if len(vectors) != len(texts) or len({len(v) for v in vectors}) > 1:
            raise EmbeddingError(
                f"{where}: {len(vectors)} vectors of sizes {sorted({len(v) for v in vectors})} "
                f"for {len(texts)} texts"
            )
        return vectors
