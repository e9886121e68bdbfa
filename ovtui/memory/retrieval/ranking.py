"""The one ranking every retriever uses (the workspace's index behind find/search, the sample agent,
the llm agent): BM25 always, cosine over dense vectors when there are some, fused, filtered, then
mixed with hotness.

Scores are similarities in [0, 1] on one scale for every memory type and index size, so a client's
threshold (OpenViking's clients set one: Hermes Agent's drops hits under 0.15) keeps what matches
the request: the lexical score is ``LexicalIndex.similarities`` — tanh of the share of the query's
weight a document holds, each word weighted by an idf of its memory type smoothed towards all of
them (``shared_weights``: a type of one file weighs words sensibly) and counted by BM25's saturated
frequency; a file of average length holding every word once scores 0.76, a word no memory holds
(an id) does not count. The dense score is the cosine (negative counts as 0).
Fusion (``[embedding] fusion``): ``weighted`` is ``(1 - w) · lexical + w · dense``; ``rrf`` is
reciprocal-rank fusion of the two rankings (k = 60), scaled to 1 for a document first in both.
bench/retrieval.py measures both against lexical alone. Hotness is mixed last, over the relevant
documents only (``HotnessMix``'s contract: a memory matching nothing is never brought in by heat).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ovtui.memory.search import LexicalIndex

if TYPE_CHECKING:
    import numpy as np

    from ovtui.memory.retrieval.vectors import VectorTable

# Relevance of the documents at ``keys`` mixed with their hotness (``HotnessMix.mixed``'s shape).
Mix = Callable[[list[str], list[float]], list[float]]
RRF_K = 60
POOL = 4  # candidates ranked per hit asked for, so hotness and filters have something to reorder


def position_key(position: int) -> str:
    """The key of a document known by its place in a list (keys tie-break in their order)."""
    return f"{position:08d}"


@dataclass(frozen=True, slots=True)
class Fusion:
    weight: float = 0.5  # the dense share
    method: Literal["weighted", "rrf"] = "weighted"


@dataclass(frozen=True, slots=True)
class Ranked:
    key: str
    score: float


class RankedIndex:
    """Documents by key (a URI): their tokens, and a vector each when an embedder gave one."""

    def __init__(self, fusion: Fusion | None = None) -> None:
        self.lexical = LexicalIndex([], [])
        self.fusion = fusion or Fusion()
        self._vectors: VectorTable | None = None

    @classmethod
    def of(cls, documents: Sequence[tuple[str, Sequence[str]]]) -> RankedIndex:
        """An index of ``(key, tokens)`` pairs (a snapshot's experiences, for an agent)."""
        index = cls()
        for key, tokens in documents:
            index.put(key, tokens)
        return index

    def __len__(self) -> int:
        return self.lexical.size

    def put(self, key: str, tokens: Sequence[str]) -> None:
        self.lexical.put(key, tokens)
        if self._vectors is not None:
            self._vectors.discard(key)  # the text changed: its vector is made again

    def put_vector(self, key: str, vector: np.ndarray) -> None:
        if self._vectors is None:
            from ovtui.memory.retrieval.vectors import VectorTable

            self._vectors = VectorTable()
        self._vectors.put(key, vector)

    def has_vector(self, key: str) -> bool:
        return self._vectors is not None and key in self._vectors

    def discard(self, key: str) -> None:
        self.lexical.discard(key)
        if self._vectors is not None:
            self._vectors.discard(key)

    def lexical_scores(
        self, tokens: Sequence[str], weights: Mapping[str, float] | None = None
    ) -> dict[Hashable, float]:
        return self.lexical.similarities(self.lexical.weights(tokens) if weights is None else weights)

    def _dense(
        self, vector: np.ndarray, wanted: int, accept: Callable[[str], bool] | None
    ) -> tuple[dict[str, float], Callable[[str], float]]:
        """The best ``wanted`` accepted documents by cosine, and the cosine of any document."""
        assert self._vectors is not None
        scores = self._vectors.query(vector)
        pool = wanted
        while True:
            best = scores.best(pool)
            found = {str(k): s for k, s in best if accept is None or accept(str(k))}
            if len(found) >= wanted or pool >= len(self._vectors):
                return found, scores.of
            pool *= 4

    def rank(
        self,
        tokens: Sequence[str],
        *,
        limit: int,
        vector: np.ndarray | None = None,
        accept: Callable[[str], bool] | None = None,
        threshold: float | None = None,
        mix: Mix | None = None,
    ) -> list[Ranked]:
        """The best ``limit`` accepted documents for the query (its tokens, and its unit vector when
        dense retrieval is on), scoring above ``threshold`` (None: above 0), best first (ties: by key)."""
        pool = limit * POOL if mix is not None else limit
        found = self.candidates(tokens, pool=pool, vector=vector, accept=accept, threshold=threshold)
        return finish(found, limit, mix)

    def candidates(
        self,
        tokens: Sequence[str],
        *,
        pool: int,
        vector: np.ndarray | None = None,
        accept: Callable[[str], bool] | None = None,
        threshold: float | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> list[Ranked]:
        """``rank`` before hotness: the best ``pool`` by relevance alone (``weights``: the query
        words' weights over every index ranked alongside this one, so their scores compare;
        ``shared_weights``)."""
        scores = {str(k): v for k, v in self.lexical_scores(tokens, weights).items()}
        wanted = pool * POOL  # candidates of each kind: a document outside both cannot be fused into the pool
        lexical = _best_accepted(scores, wanted, accept)
        if vector is None or self._vectors is None or not len(self._vectors):
            fused = lexical
        else:
            dense, cosine = self._dense(vector, wanted, accept)
            for key in lexical:
                dense.setdefault(key, max(0.0, cosine(key)))
            for key in dense:
                lexical.setdefault(key, scores.get(key, 0.0))
            fused = self._fuse(lexical, dense)
        floor = 0.0 if threshold is None else threshold
        return heapq.nsmallest(pool, (Ranked(k, v) for k, v in fused.items() if v > floor), key=_order)

    def _fuse(self, lexical: dict[str, float], dense: dict[str, float]) -> dict[str, float]:
        keys = lexical.keys() | dense.keys()
        if self.fusion.method == "weighted":
            w = self.fusion.weight
            return {k: (1 - w) * lexical.get(k, 0.0) + w * dense.get(k, 0.0) for k in keys}
        best = 2 / (RRF_K + 1)
        fused = dict.fromkeys(keys, 0.0)
        for scores in (lexical, dense):
            order = sorted((k for k in scores if scores[k] > 0), key=lambda k: (-scores[k], k))
            for rank, key in enumerate(order, start=1):
                fused[key] += 1 / (RRF_K + rank) / best
        return fused


def _best_accepted(
    scores: dict[str, float], count: int, accept: Callable[[str], bool] | None
) -> dict[str, float]:
    """The ``count`` best-scoring keys ``accept`` takes (ties: by key), looking at as few as it can."""
    step = count
    while True:
        best = heapq.nsmallest(step, scores.items(), key=lambda pair: (-pair[1], pair[0]))
        chosen = [(k, v) for k, v in best if accept is None or accept(k)]
        if len(chosen) >= count or step >= len(scores):
            return dict(chosen[:count])
        step *= 4


def _order(ranked: Ranked) -> tuple[float, str]:
    return -ranked.score, ranked.key


def finish(ranked: list[Ranked], limit: int, mix: Mix | None) -> list[Ranked]:
    """The first ``limit`` of candidates (best first), once their hotness is mixed in."""
    ranked = sorted(ranked, key=_order)
    if mix is not None and ranked:
        mixed = mix([r.key for r in ranked], [r.score for r in ranked])
        ranked = sorted((Ranked(r.key, m) for r, m in zip(ranked, mixed, strict=True)), key=_order)
    return ranked[:limit]
