"""An index derived from the last snapshot's scores exactly like one built from scratch."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ovtui.memory.search import LexicalIndex, tokenize

WORDS = ["refund", "cancel", "flight", "seat", "baggage", "pet", "meal", "upgrade", "visa", "wifi", "late"]
texts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=12).map(" ".join)
corpora = st.dictionaries(st.sampled_from([f"e{i}" for i in range(12)]), texts, max_size=12)


def _index(corpus: dict[str, str]) -> tuple[list[str], list[list[str]]]:
    keys = sorted(corpus)
    return keys, [tokenize(corpus[k]) for k in keys]


@settings(max_examples=60, deadline=None)
@given(before=corpora, after=corpora, query=texts)
def test_updated_index_scores_like_a_fresh_one(
    before: dict[str, str], after: dict[str, str], query: str
) -> None:
    old_keys, old_docs = _index(before)
    old = LexicalIndex(old_docs, old_keys)
    old_scores = old.scores(tokenize(query))

    keys, docs = _index(after)
    derived = old.updated(docs, keys)
    fresh = LexicalIndex(docs, keys)
    assert derived.scores(tokenize(query)) == fresh.scores(tokenize(query))
    assert derived.top(tokenize(query), 3) == fresh.top(tokenize(query), 3)
    assert old.scores(tokenize(query)) == old_scores  # the old snapshot's index is untouched


def test_duplicate_keys_fall_back_to_positions() -> None:
    index = LexicalIndex([["refund"], ["refund", "late"]], ["same", "same"])
    assert [i for i, _ in index.top(["late"], 2)] == [1]
