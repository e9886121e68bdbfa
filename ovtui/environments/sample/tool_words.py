"""Which of an environment's tools a phrase names, read from the tools' own names and descriptions.

A person writes "return the money to the original payment method", not ``refund_payment``. The
matcher knows each tool only by its schema: the words of its name (split on ``_``) and of its
description, stemmed. A phrase scores a tool by the words they share, each weighted by how
distinctive it is among the tools (a word every tool mentions says nothing) and doubled when it is
part of the tool's name. A tool is named only when the phrase shares at least two words with it (an
action and what it acts on: "changing anything" alone names no tool), its score reaches one and a
half distinctive description words, and it clearly beats the runner-up. A weak or tied reading
names nothing, so the line stays "not understood" rather than guessed. Nothing here knows the
sample's tools: any environment's set is read the same way.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ovtui.plugins import stem
from ovtui.plugins.wording.text import STOPWORDS

NAME_WEIGHT = 2.0
MIN_SHARED_WORDS = 2
# The least score that names a tool, in distinctive description words (a word only that tool has).
MIN_SCORE_IN_WORDS = 1.5
# The best tool must beat the second by this factor; closer than that is a tie.
MARGIN = 1.25
# Words that carry no action or object: pronouns and particles people put around an instruction.
_FILLER = STOPWORDS | frozenset(
    "them him her they he she its any all up out off over new now also too own sure make".split()
)
_WORD = re.compile(r"[a-z]+")
# A phrase ends at punctuation or at a conjunction: "read it and refund" holds two actions.
_PHRASE_BREAK = re.compile(r"[,;:.!?()]|\b(?:and|or|but|so|then)\b")


@dataclass(frozen=True)
class ToolMatch:
    tool: str
    start: int  # where in the text the first word the tool shares with the phrase begins
    end: int  # where the last one ends
    score: float


def _stems(text: str) -> list[tuple[str, int, int]]:
    return [
        (stem(m.group(0)), m.start(), m.end())
        for m in _WORD.finditer(text.lower())
        if m.group(0) not in _FILLER and len(m.group(0)) > 1
    ]


class ToolMatcher:
    """Reads phrases against one set of tools, given as name → description."""

    def __init__(self, tools: Mapping[str, str]) -> None:
        self._name_words = {name: {s for s, _, _ in _stems(name.replace("_", " "))} for name in tools}
        self._words = {
            name: self._name_words[name] | {s for s, _, _ in _stems(description)}
            for name, description in tools.items()
        }
        counts = Counter(word for words in self._words.values() for word in words)
        size = max(len(tools), 1)
        self._weight = {word: math.log(1 + size / count) for word, count in counts.items()}
        self.threshold = MIN_SCORE_IN_WORDS * math.log(1 + size)

    def scores(self, phrase: str) -> dict[str, float]:
        """The score of every tool ``phrase`` shares enough words with."""
        words = {s for s, _, _ in _stems(phrase)}
        found: dict[str, float] = {}
        for tool, vocabulary in self._words.items():
            shared = words & vocabulary
            if len(shared) >= MIN_SHARED_WORDS:
                found[tool] = sum(
                    self._weight[w] * (NAME_WEIGHT if w in self._name_words[tool] else 1.0) for w in shared
                )
        return found

    def match(self, phrase: str) -> ToolMatch | None:
        """The one tool ``phrase`` names, or None when no tool is named clearly enough."""
        ranked = sorted(self.scores(phrase).items(), key=lambda item: -item[1])
        if not ranked or ranked[0][1] < self.threshold:
            return None
        tool, best = ranked[0]
        if len(ranked) > 1 and best < ranked[1][1] * MARGIN:
            return None
        spans = [(start, end) for s, start, end in _stems(phrase) if s in self._words[tool]]
        return ToolMatch(tool, spans[0][0], spans[-1][1], best)

    def find(self, text: str) -> list[ToolMatch]:
        """The tools the phrases of ``text`` name, in order, with their places in ``text``."""
        found: list[ToolMatch] = []
        start = 0
        for cut in [*_PHRASE_BREAK.finditer(text), None]:
            end = cut.start() if cut else len(text)
            match = self.match(text[start:end])
            if match is not None:
                found.append(ToolMatch(match.tool, start + match.start, start + match.end, match.score))
            start = cut.end() if cut else end
        return found
