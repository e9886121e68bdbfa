"""Small text tools for the offline backend: tokens, scrubbing of specifics, similarity.

Scrubbing matters because whatever the offline learner writes into an experience must hold for
the next customer too: ids, emails, dates and personal names are replaced by placeholders.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ovtui.core.bounded_json import parse_json
from ovtui.core.case_patterns import EMAIL, ISO_DATE
from ovtui.core.names import slugify
from ovtui.memory.search import stem

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


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_ERROR_HEAD = re.compile(r"^\s*(?:error|exception|failed)\b\s*[:\-–]?\s*", re.IGNORECASE)
_PLAIN_WORD = re.compile(r"^[a-z][a-z'-]*$")
MAX_ERROR_WORDS = 5


def mask_values(text: str, values: Iterable[str]) -> str:
    """``text`` without the given values (what the user passed to tools), longest first, then scrubbed."""
    for value in sorted({v.strip() for v in values if len(v.strip()) >= 2}, key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", "<value>", text, flags=re.IGNORECASE)
    return scrub_specifics(text)


_ERROR_FIELDS = ("code", "error_code", "type", "kind", "reason", "error", "message", "detail")


def _error_text(text: str) -> str:
    """The part of a JSON answer that names its error ({"error": {"code": "not_found"}} → not_found)."""
    try:
        value: object = parse_json(text, source="a tool output")
    except ValueError:
        return text
    for _ in range(3):  # an error object nested in an error object
        if not isinstance(value, dict):
            break
        value = next((value[k] for k in _ERROR_FIELDS if value.get(k)), "")
    return value.replace("_", " ") if isinstance(value, str) else ""


def error_kind(text: str, values: Iterable[str] = ()) -> str:
    """What kind of error a tool's answer names, as a few plain lower-case words ("order not found").

    Only words that describe the error survive: quoted text, the values the call was given, ids,
    numbers, e-mails, dates and capitalised words (names; the first word is taken as sentence case)
    are dropped, so the kind fits the next call too. Empty when the answer names nothing else."""
    text = _error_text(text.strip())
    text = mask_values(_QUOTED.sub(" ", _ERROR_HEAD.sub("", text.strip())), values)
    words = text.split()
    if words:
        words[0] = words[0].lower()
    plain = [w.strip(".,;:!?()[]{}") for w in words]
    kept = [w for w in plain if _PLAIN_WORD.match(w)][:MAX_ERROR_WORDS]
    while kept and kept[-1] in STOPWORDS:  # "order not found for <value>": the "for" says nothing
        kept.pop()
    return " ".join(kept)
