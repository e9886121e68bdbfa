"""Experiences in an agent's prompt: which ones are relevant to a request (the ranking every
ovtui retriever shares, hotness mixed in where asked) and the line that introduces them."""

from __future__ import annotations

from ovtui.core.domain import Experience, ExperienceSet
from ovtui.memory.hotness import HotnessMix
from ovtui.memory.retrieval.ranking import RankedIndex, position_key
from ovtui.memory.search import stemmed_tokens

EXPERIENCES_HEADER = "Follow these experiences learned from earlier conversations when they apply:\n\n"


def relevant_experiences(
    policy_set: ExperienceSet, query: str, limit: int, hotness: HotnessMix | None = None
) -> list[Experience]:
    """The experiences most relevant to ``query`` (the ranking every ovtui retriever shares); with
    hotness, relevance and hotness mixed over the matches (a memory that matches nothing is never
    brought in by being hot). The caller records their use: it knows who used them."""
    active = [p for p in policy_set.policies if p.status.serves]
    index = RankedIndex.of(
        [(position_key(i), stemmed_tokens(f"{p.name} {p.content}")) for i, p in enumerate(active)]
    )
    mix = None
    if hotness is not None and hotness.weight > 0:
        weighed = hotness

        def mix(keys: list[str], relevance: list[float]) -> list[float]:
            return weighed.mixed([active[int(k)].uri for k in keys], relevance)

    return [active[int(r.key)] for r in index.rank(stemmed_tokens(query), limit=limit, mix=mix)]
