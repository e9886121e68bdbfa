"""Lexical similarity over memory texts (BM25), for candidate experiences, the agent and the search tool.

rank_bm25's Okapi idf, ``log((N - n + 0.5) / (n + 0.5))``, is zero or negative for a word found in
half the documents or more, so in a young workspace of one or two files nothing would ever match.
We keep the library's scoring and swap in Lucene's always-positive idf.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from rank_bm25 import BM25Okapi

_TOKEN = re.compile(r"[a-z0-9]+")
# Words that carry no intent; dropping them keeps short queries from matching everything.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "my",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "you",
        "your",
        "me",
        "we",
        "our",
        "can",
        "could",
        "would",
        "please",
    ]
)


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower().replace("_", " ")) if t not in _STOP]


class _PositiveIdfBM25(BM25Okapi):
    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
        self.average_idf = sum(self.idf.values()) / max(len(self.idf), 1)


class LexicalIndex:
    """BM25 over documents already split into tokens (callers may bring their own tokenizer)."""

    def __init__(self, documents: Sequence[list[str]]) -> None:
        self.size = len(documents)
        # An empty document would break the length normalisation: give it a token nothing matches.
        self._bm25 = _PositiveIdfBM25([d or ["\x00"] for d in documents]) if documents else None

    def scores(self, query: list[str]) -> list[float]:
        if self._bm25 is None or not query:
            return [0.0] * self.size
        return [float(s) for s in self._bm25.get_scores(query)]


def rank(query: str, documents: Sequence[str], *, limit: int = 5) -> list[tuple[int, float]]:
    """Indices of the best-matching documents with their scores, best first; zero scores dropped."""
    scores = LexicalIndex([tokenize(d) for d in documents]).scores(tokenize(query))
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [(i, scores[i]) for i in order[:limit] if scores[i] > 0]
