"""Lexical scores are similarities in [0, 1], monotone with the ranking they make, and order one
index's documents as BM25 does (issue #37, item 6: OpenViking's scale, the ranking kept)."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from ovtui.memory.retrieval.ranking import RankedIndex
from ovtui.memory.search import LexicalIndex, shared_weights

WORDS = ["seat", "window", "alice", "refund", "cancel", "bag", "flight", "late", "meal", "pet"]
documents = st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=30), min_size=1, max_size=12)
queries = st.lists(st.sampled_from([*WORDS, "c7642"]), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(documents, documents, queries)
def test_scores_stay_in_the_unit_interval_across_indexes(
    first: list[list[str]], second: list[list[str]], query: list[str]
) -> None:
    indexes = [LexicalIndex(first), LexicalIndex(second)]
    for index in indexes:
        scores = index.similarities(shared_weights(query, indexes, index))
        assert all(0.0 <= s <= 1.0 for s in scores.values())


@settings(max_examples=200, deadline=None)
@given(documents, queries)
def test_the_ranking_is_bm25s_and_its_scores_fall_with_it(docs: list[list[str]], query: list[str]) -> None:
    keys = [f"d{i:02d}" for i in range(len(docs))]
    index = RankedIndex.of(list(zip(keys, docs, strict=True)))
    ranked = index.rank(query, limit=len(docs))
    scores = [r.score for r in ranked]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    bm25 = index.lexical.matches(query)
    assert {r.key for r in ranked} == {k for k, v in bm25.items() if v > 0}
    order = [bm25[r.key] for r in ranked]  # BM25 falls (or ties) along the similarity's ranking
    assert all(a >= b - 1e-9 for a, b in pairwise(order))


def test_a_full_match_scores_high_and_a_one_word_match_low() -> None:
    docs = [["alice", "prefer", "window", "seat"], ["seat", "map", "cabin", "row", "aisle", "exit"]]
    index = RankedIndex.of([("pref", docs[0]), ("map", docs[1])])
    scores = {r.key: r.score for r in index.rank(["seat", "alice", "prefer"], limit=2)}
    assert scores["pref"] >= 0.5 > 0.15 > scores["map"]
