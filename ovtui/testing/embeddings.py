"""Deterministic local embedders for tests and benchmarks, where no real embedding model can be
reached: vectors from the text alone, the same on every machine.

``hashing_vector`` hashes a text's words and character trigrams into ``dimensions`` buckets (signed,
so unrelated texts stay near orthogonal): it sees shared spellings (cancel / cancellation) but no
meaning; a figure measured with it says what fusion does with such a signal, not what a trained
model would add. ``concept_vector`` adds a small table of synonyms, so tests can check that
paraphrases with no word in common meet.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping

DIMENSIONS = 256
_WORD = re.compile(r"[a-z0-9]+")


def _bucket(feature: str, dimensions: int) -> tuple[int, float]:
    value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
    return value % dimensions, 1.0 if (value >> 32) & 1 else -1.0


def _normalised(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def hashing_vector(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        features = [f"w:{word}"] + [f"t:{word[i : i + 3]}" for i in range(max(1, len(word) - 2))]
        for feature in features:
            bucket, sign = _bucket(feature, dimensions)
            vector[bucket] += sign * (2.0 if feature.startswith("w:") else 1.0)
    return _normalised(vector)


def concept_vector(synonyms: Mapping[str, str], dimensions: int = DIMENSIONS) -> Callable[[str], list[float]]:
    """An embedder for which every word in ``synonyms`` (word -> concept) stands for its concept."""

    def embed(text: str) -> list[float]:
        vector = [0.0] * dimensions
        for word in _WORD.findall(text.lower()):
            bucket, sign = _bucket(f"c:{synonyms.get(word, word)}", dimensions)
            vector[bucket] += sign
        return _normalised(vector)

    return embed


class LocalEmbedder:
    """The ``Embedder`` Protocol over a function of the text, in process."""

    def __init__(
        self, embed: Callable[[str], list[float]] = hashing_vector, space: str = "local-hashing"
    ) -> None:
        self._embed = embed
        self._space = space
        self.calls = 0
        self.texts = 0

    @property
    def space(self) -> str:
        return self._space

    async def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return [self._embed(text) for text in texts]

    async def aclose(self) -> None:
        """Nothing is held open: the vectors are made in process."""
