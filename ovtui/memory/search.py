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
from collections.abc import Hashable, Mapping, Sequence
from functools import lru_cache

_TOKEN = re.compile(r"[a-z0-9]+")
# Words that carry no intent; dropping them keeps short queries from matching everything.
_STOP = frozenset(
    """a an and are as at be by for from has have i if in is it its my of on or so that the this to
    was were will with you your me we our can could would please what which
    does do here""".split()
)
K1 = 1.2
B = 0.75
# A long query (a whole trajectory) is cut to its rarest words: they carry the match, while common
# words would touch every document and only add noise and time.
MAX_QUERY_TERMS = 24
COMMON_AFTER = 50  # documents: from this size on, words in more than half of them are skipped
# Documents' worth of the frequency over every memory type a word's frequency in one type is
# smoothed with (``shared_weights``): one is enough for a type of one file, and leaves the
# ranking within a type of dozens as its own idf makes it (bench/retrieval.py measured 1 to 10).
PRIOR_DOCS = 1.0


class _EveryTerm:
    """The copied postings of an index changed in place: all of them are its own already (such an
    index is never derived from another, nor another from it)."""

    def __contains__(self, term: object) -> bool:
        return True

    def add(self, term: str) -> None:
        return None

    def discard(self, term: str) -> None:
        return None


_OWN = _EveryTerm()
Copied = set[str] | _EveryTerm  # the terms whose postings an index change may write in place


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower().replace("_", " ")) if t not in _STOP]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A crude stemmer, enough for "refunded"/"refund" and "cancelled"/"cancel" to meet (cached:
    a workspace's vocabulary is small next to the words it indexes)."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) >= 4 and word.endswith("e"):
        word = word[:-1]
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeious":
        word = word[:-1]
    return word


def stemmed_tokens(text: str) -> list[str]:
    """``tokenize`` with each word stemmed: what retrieval indexes and queries with, so a request
    saying "cancelled" finds the memory saying "cancel"."""
    return [stem(token) for token in tokenize(text)]


@lru_cache(maxsize=32768)
def cached_tokens(text: str) -> tuple[str, ...]:
    """Tokens of a memory text; indexes are rebuilt per snapshot, mostly from unchanged texts."""
    return tuple(tokenize(text))


class LexicalIndex:
    """BM25 over documents already split into tokens (callers may bring their own tokenizer).

    Documents have keys (their positions unless given). ``updated`` derives the index of a new
    snapshot from this one: only documents whose tokens changed are re-indexed, and postings are
    copied on write, so the old index stays valid. A training run applies a plan per batch; a
    rebuild over 1,000 experiences after every apply was the biggest cost of plan-and-apply.
    ``put`` and ``discard`` change an index in place instead (the workspace's retrieval index,
    which one lock guards): a changed file costs its own words, not a copy of every posting.
    """

    def __init__(self, documents: Sequence[Sequence[str]], keys: Sequence[Hashable] | None = None) -> None:
        self._tokens: dict[Hashable, Sequence[str]] = {}
        self._lengths: dict[Hashable, int] = {}
        self._postings: dict[str, dict[Hashable, int]] = {}
        keys = _keys(documents, keys)
        copied: set[str] = set()
        for key, document in zip(keys, documents, strict=True):
            self._add(key, document, copied)
        self._finish(keys)

    def updated(self, documents: Sequence[Sequence[str]], keys: Sequence[Hashable]) -> LexicalIndex:
        """The index of ``documents``, re-indexing only those whose tokens differ from this one's."""
        keys = _keys(documents, keys)
        wanted = dict(zip(keys, documents, strict=True))
        new = LexicalIndex.__new__(LexicalIndex)
        new._tokens, new._lengths = dict(self._tokens), dict(self._lengths)
        new._postings = dict(self._postings)  # inner dicts are copied before their first change
        copied: set[str] = set()
        for key, old in self._tokens.items():
            document = wanted.get(key)
            if document is None or (document is not old and tuple(document) != tuple(old)):
                new._remove(key, copied)
        for key, document in wanted.items():
            if key not in new._tokens:
                new._add(key, document, copied)
        new._finish(keys)
        return new

    def shared_keys(self, keys: Sequence[Hashable]) -> int:
        return sum(key in self._tokens for key in keys)

    def _writable(self, term: str, copied: Copied) -> dict[Hashable, int]:
        if term not in copied:
            self._postings[term] = dict(self._postings.get(term, {}))
            copied.add(term)
        return self._postings.setdefault(term, {})

    def _add(self, key: Hashable, document: Sequence[str], copied: Copied) -> None:
        self._tokens[key] = document
        self._lengths[key] = len(document)
        for term, count in Counter(document).items():
            self._writable(term, copied)[key] = count

    def _remove(self, key: Hashable, copied: Copied) -> None:
        for term in set(self._tokens.pop(key)):
            posting = self._writable(term, copied)
            del posting[key]
            if not posting:
                del self._postings[term]
                copied.discard(term)
        del self._lengths[key]

    def _finish(self, keys: Sequence[Hashable]) -> None:
        self.size = len(keys)
        self._total_length = sum(self._lengths.values())
        self._positions: dict[Hashable, int] | None = {key: i for i, key in enumerate(keys)}

    # --- in place ---
    def put(self, key: Hashable, document: Sequence[str]) -> None:
        """Index ``document`` under ``key``, replacing what the key held."""
        if key in self._tokens:
            self.discard(key)
        self._tokens[key] = document
        self._lengths[key] = len(document)
        postings = self._postings
        for term, count in Counter(document).items():
            found = postings.get(term)
            if found is None:
                postings[term] = {key: count}
            else:
                found[key] = count
        self.size += 1
        self._total_length += len(document)
        self._positions = None

    def discard(self, key: Hashable) -> None:
        if key not in self._tokens:
            return
        self._total_length -= self._lengths[key]
        self._remove(key, _OWN)
        self.size -= 1
        self._positions = None

    def __contains__(self, key: object) -> bool:
        return key in self._tokens

    @property
    def _position(self) -> dict[Hashable, int]:
        if self._positions is None:  # changed in place: the documents in the order they were put
            self._positions = {key: i for i, key in enumerate(self._tokens)}
        return self._positions

    def knows(self, term: str) -> bool:
        return term in self._postings

    def matches(self, query: Sequence[str]) -> dict[Hashable, float]:
        """The BM25 score of every document holding a query word, by key (the words as
        ``weights`` keeps them): what ranks one index alone, on no fixed scale."""
        totals: dict[Hashable, float] = {}
        average = (self._total_length / self.size) if self.size else 0.0
        base, per_word = K1 * (1 - B), K1 * B / (average or 1.0)
        lengths = self._lengths
        for term, idf in self.weights(query).items():
            for key, count in self._postings.get(term, {}).items():
                norm = base + per_word * lengths[key]
                totals[key] = totals.get(key, 0.0) + idf * count * (K1 + 1) / (count + norm)
        return totals

    def weights(self, query: Sequence[str]) -> dict[str, float]:
        """The weight of each query word this index holds (its idf), as ``shared_weights`` gives
        them for this index alone."""
        return shared_weights(query, [self])

    def similarities(self, weights: Mapping[str, float]) -> dict[Hashable, float]:
        """The similarity in [0, 1) of every document holding a weighted word: ``tanh`` of the
        share of the query's weight it holds, each word counted by BM25's saturated frequency
        (1 for one occurrence in a document of average length, up to ``K1 + 1`` for many). About
        the share itself for a partial match; 0.76 for a document of average length holding every
        word once. ``weights``: ``shared_weights``, so the scores of indexes searched together
        compare."""
        total = sum(weights.values())
        if total <= 0:
            return {}
        average = (self._total_length / self.size) if self.size else 0.0
        base, per_word = K1 * (1 - B), K1 * B / (average or 1.0)
        lengths, totals = self._lengths, dict[Hashable, float]()
        for term, weight in weights.items():
            for key, count in self._postings.get(term, {}).items():
                saturated = count * (K1 + 1) / (count + base + per_word * lengths[key])
                totals[key] = totals.get(key, 0.0) + weight * saturated
        return {key: math.tanh(score / total) for key, score in totals.items()}

    def _accumulate(self, query: Sequence[str]) -> dict[int, float]:
        position = self._position
        return {position[key]: score for key, score in self.matches(query).items()}

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


def shared_weights(
    query: Sequence[str], indexes: Sequence[LexicalIndex], own: LexicalIndex | None = None
) -> dict[str, float]:
    """The weight of each query word for ``own`` (default: the first index) searched together with
    ``indexes``: an idf whose document frequency is ``own``'s, smoothed towards the frequency over
    all the indexes by ``PRIOR_DOCS`` documents' worth (a memory type of one file still weighs
    words sensibly, a large one mostly by itself). In a large set a word in more than half the
    documents is dropped (it barely moves a score but touches every document), and a long query
    keeps its ``MAX_QUERY_TERMS`` rarest words. A word none holds weighs as much as a word can:
    the query asks for something the memories do not say ("penguins"), so every score is lower;
    unless it holds a digit (an id, "C7642"), which is no evidence either way and gets none."""
    own = own if own is not None else indexes[0]
    size = sum(index.size for index in indexes)
    found = {
        term: count
        for term in set(query)
        if (count := sum(len(index._postings.get(term, ())) for index in indexes))
    }
    unheld = [term for term in set(query) if term not in found and term.isalpha()]
    if size >= COMMON_AFTER:
        found = {term: count for term, count in found.items() if count <= size // 2}
    smooth = 0.5 / (own.size + PRIOR_DOCS)

    def idf(share: float) -> float:
        return math.log(1 + (1 - share + smooth) / (share + smooth))

    weights = {
        term: idf((len(own._postings.get(term, ())) + PRIOR_DOCS * count / size) / (own.size + PRIOR_DOCS))
        for term, count in found.items()
    }
    if len(weights) > MAX_QUERY_TERMS:
        kept = sorted(weights, key=lambda t: (-weights[t], t))[:MAX_QUERY_TERMS]
        weights = {term: weights[term] for term in kept}
    return weights | dict.fromkeys(unheld, idf(0.0))


def _keys(documents: Sequence[Sequence[str]], keys: Sequence[Hashable] | None) -> list[Hashable]:
    """The given keys when they are unique, else the positions."""
    if keys is not None and len(set(keys)) == len(keys) == len(documents):
        return list(keys)
    return list(range(len(documents)))


def rank(query: str, documents: Sequence[str], *, limit: int = 5) -> list[tuple[int, float]]:
    """Indices of the best-matching documents with their scores, best first; zero scores dropped."""
    return LexicalIndex([tokenize(d) for d in documents]).top(tokenize(query), limit)
