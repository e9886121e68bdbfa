"""Lexical similarity over memory texts (BM25), for candidate experiences and the search tool."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rank_bm25 import BM25Okapi

_TOKEN = re.compile(r"[a-z0-9]+")
# Words that carry no intent; dropping them keeps short queries from matching everything.
_STOP = frozenset(
    "a an and are as at be by for from has have i if in is it its my of on or so that the this to was "
    "were will with you your me we our can could would please".split()
)


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower().replace("_", " ")) if t not in _STOP]


def rank(query: str, documents: Sequence[str], *, limit: int = 5) -> list[tuple[int, float]]:
    """Indices of the best-matching documents with their scores, best first; zero scores dropped."""
    if not documents:
        return []
    corpus = [tokenize(d) or ["\x00"] for d in documents]
    terms = tokenize(query)
    if not terms:
        return []
    scores = BM25Okapi(corpus).get_scores(terms)
    order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))
    return [(i, float(scores[i])) for i in order[:limit] if scores[i] > 0]
