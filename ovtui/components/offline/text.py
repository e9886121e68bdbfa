"""Small text tools for the offline backend: tokens, scrubbing of specifics, similarity.

Scrubbing matters because whatever the offline learner writes into an experience must hold for
the next customer too: ids, emails, dates and personal names are replaced by placeholders.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ovtui.case_patterns import EMAIL, ISO_DATE
from ovtui.workspace.paths import slugify

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "do",
        "for",
        "from",
        "have",
        "hello",
        "hi",
        "i",
        "if",
        "in",
        "is",
        "it",
        "its",
        "just",
        "like",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "please",
        "so",
        "thank",
        "thanks",
        "that",
        "the",
        "their",
        "then",
        "this",
        "to",
        "was",
        "we",
        "were",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)

_WORD = re.compile(r"[a-z0-9_]+")
_MIXED_ID = re.compile(r"\b(?=[A-Za-z_-]*\d)(?=\d*[A-Za-z])[A-Za-z0-9_-]{3,}\b")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
# Two or more capitalised words in a row read as a personal name ("Maria Lopez").
_PERSON = re.compile(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)+\b")


def stem(word: str) -> str:
    """A crude stemmer, enough for "refunded"/"refund" and "cancelled"/"cancel" to meet."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) >= 4 and word.endswith("e"):
        word = word[:-1]
    if len(word) >= 4 and word[-1] == word[-2] and word[-1] not in "aeious":
        word = word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-case, stemmed word tokens without stopwords."""
    return [stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in STOPWORDS]


def scrub_specifics(text: str) -> str:
    """Replace emails, dates, ids, numbers and personal names with placeholders."""
    text = EMAIL.sub("<email>", text)
    text = ISO_DATE.sub("<date>", text)
    text = _MIXED_ID.sub("<id>", text)
    text = _NUMBER.sub("<n>", text)
    return _PERSON.sub("<name>", text)


def intent_name(text: str, *, fallback: str = "general_request") -> str:
    """A snake_case name for an intent: digits and ids are dropped so no case leaks into it."""
    text = ISO_DATE.sub(" ", EMAIL.sub(" ", text))
    words = [w.lower() for w in re.findall(r"[A-Za-z0-9]+", text) if not any(c.isdigit() for c in w)]
    return slugify(" ".join(words[:6]), fallback=fallback) if words else fallback


def name_tokens(name: str) -> set[str]:
    return {t for t in re.split(r"[_\-\s.]+", name.lower()) if t}


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    left, right = set(a), set(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)
