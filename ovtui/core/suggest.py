"""The nearest known word to a misspelt one, for messages that say what was probably meant."""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz import process

SIMILARITY_CUTOFF = 70  # rapidfuzz's 0-100 score: below it, a suggestion would mislead more than help


def closest(word: str, choices: Sequence[str]) -> str | None:
    """The closest of ``choices`` to ``word``, or None when none is close."""
    match = process.extractOne(word, list(choices), score_cutoff=SIMILARITY_CUTOFF)
    return None if match is None else str(match[0])


def did_you_mean(word: str, choices: Sequence[str]) -> str:
    """`` — did you mean 'x'?`` for the closest of ``choices``, or "" when none is close."""
    match = closest(word, choices)
    return f" — did you mean {match!r}?" if match else ""
