"""Lexical similarity over memory texts: BM25 on an inverted index.

We score with Okapi BM25 and Lucene's always-positive idf, ``log(1 + (N - n + 0.5) / (n + 0.5))``
(the classic idf is zero or negative for a word in half the documents, so a young workspace of
one or two files would never match). The index is inverted because candidate search runs once
per trajectory against the whole policy set: scoring only the documents that contain a query
word keeps it proportional to the matches, not to the size of the set (rank_bm25 scores every
document for every word, which made 1,000 experiences cost ~50 ms per query).
"""

from __future__ import annotations

import heapq
import math
import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

_TOKEN = re.compile(r"[a-z0-9]+")
# Words that carry no intent; dropping them keeps short queries from matching everything.
_STOP = frozenset(
    """a an and are as at be by for from has have i if in is it its my of on or so that the this to
    was were will with you your me we our can could would please""".split()
)
K1 = 1.2
B = 0.75
# A long query (a whole trajectory) is cut to its rarest words: they carry the match, while common
# words would touch every document and only add noise and time.
MAX_QUERY_TERMS = 24
COMMON_AFTER = 50  # documents: from this size on, words in more than half of them are skipped


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower().replace("_", " ")) if t not in _STOP]


@lru_cache(maxsize=32768)
def cached_tokens(text: str) -> tuple[str, ...]:
    """Tokens of a memory text; indexes are rebuilt per snapshot, mostly from unchanged texts."""
    return tuple(tokenize(text))


class LexicalIndex:
    """BM25 over documents already split into tokens (callers may bring their own tokenizer)."""

    def __init__(self, documents: Sequence[Sequence[str]]) -> None:
        self.size = len(documents)
        lengths = [len(d) for d in documents]
        average = (sum(lengths) / self.size) if self.size else 0.0
        self._norm = [K1 * (1 - B + B * n / (average or 1.0)) for n in lengths]
        self._postings: dict[str, list[tuple[int, int]]] = {}
        for index, document in enumerate(documents):
            for term, count in Counter(document).items():
                self._postings.setdefault(term, []).append((index, count))
        self._idf = {
            term: math.log(1 + (self.size - len(p) + 0.5) / (len(p) + 0.5))
            for term, p in self._postings.items()
        }

    def _accumulate(self, query: Sequence[str]) -> dict[int, float]:
        totals: dict[int, float] = {}
        # In a large set, a word found in most documents barely moves a score but touches every one.
        common = self.size // 2 if self.size >= COMMON_AFTER else self.size + 1
        terms = [t for t in set(query) if t in self._idf and len(self._postings[t]) <= common]
        if len(terms) > MAX_QUERY_TERMS:
            terms = sorted(terms, key=lambda t: (-self._idf[t], t))[:MAX_QUERY_TERMS]
        for term in terms:
            idf = self._idf[term]
            for index, count in self._postings[term]:
                totals[index] = totals.get(index, 0.0) + idf * count * (K1 + 1) / (count + self._norm[index])
        return totals

    def scores(self, query: Sequence[str]) -> list[float]:
        """One score per document (0 where no query word occurs)."""
        dense = [0.0] * self.size
        for index, score in self._accumulate(query).items():
            dense[index] = score
        return dense

    def top(self, query: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """The best ``limit`` documents with a positive score, best first (ties: lower index first)."""
        totals = self._accumulate(query)
        return heapq.nsmallest(
            limit, ((i, s) for i, s in totals.items() if s > 0), key=lambda x: (-x[1], x[0])
        )


def rank(query: str, documents: Sequence[str], *, limit: int = 5) -> list[tuple[int, float]]:
    """Indices of the best-matching documents with their scores, best first; zero scores dropped."""
    return LexicalIndex([tokenize(d) for d in documents]).top(tokenize(query), limit)
