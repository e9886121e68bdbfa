"""What a user says about themself inside a request, found without a model: the profile facts
("my name is …", "I am a/an …", "I work as/at …", "I live in …"), the preferences ("I prefer …",
"always …", "please never …") and the introductions ("I'm Dana", "this is Dana"), clause by
clause. The offline session extractor files the facts and preferences as memories; a request
kept as an example or a trajectory's ``task_query`` is written without them (``request_pattern``,
``without_personal``), so what is shared with every later agent is the task, not the person.

Clauses end at ";" and at "and"/"but" before "I"/"my"; a sentence at ``.``, ``!``, ``?``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ovtui.core.case_patterns import EMAIL
from ovtui.plugins.wording.text import STOPWORDS, mask_values

SENTENCE = re.compile(r"[^.!?\n。！？]+")
_SENTENCE_WITH_END = re.compile(r"[^.!?\n。！？]+[.!?。！？]*")
PROFILE = [
    re.compile(r"\bmy name is ([^,;]+)", re.I),
    re.compile(r"\bi am (?:an?|the) ([^,;]+)", re.I),
    re.compile(r"\bi work (?:as|at|for) ([^,;]+)", re.I),
    re.compile(r"\bi live in ([^,;]+)", re.I),
]
PREFERENCE = re.compile(
    r"\b(?:i (?:really )?(?:prefer|like|love|hate|don't like|do not like|want)"
    r"|(?:please )?(?:always|never))\b\s+(.+)",
    re.I,
)
# Who is speaking, by name: a capitalised name after the introduction (the name's case counts).
_INTRODUCTION = re.compile(
    r"\b(?:[Ii]'m|I am|[Tt]his is|[Cc]all me)\s+(?:<name>|[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)?)"
)  # (``<name>``: a name the specifics scrub already masked)
# A clause that begins by saying who is speaking ("I am Ana Silva, customer C1234"): it names who asks,
# not what (a capital or a masked value follows: "I am looking to cancel" still asks something).
_INTRODUCED = re.compile(r"^(?i:(?:hi|hello|hey)\b[\s,!]*)?(?i:i am|i'm|this is|it's)\s+(?:[A-Z]|<)")
_CLAUSE_BREAK = re.compile(r";|,?\s+\b(?:and|but)\s+(?=(?:i|my)\b)", re.I)
TRAILING_FILLER = re.compile(r"(?:[\s,]+(?:thanks|thank you|please|if possible|by the way))+\s*$", re.I)
# Words that say nothing about what a request asks for (besides the learner's stopwords).
_FILLERS = frozenset({"hey", "ok", "okay", "also", "want", "need", "help", "wanted", "there", "am"})


def sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE.findall(text) if s.strip()]


def clauses(text: str) -> list[str]:
    return [c.strip(" ,") for s in sentences(text) for c in _CLAUSE_BREAK.split(s) if c.strip(" ,")]


def unstated(clause: str) -> str:
    """A clause without the profile fact, preference or introduction it states (what is left asks
    for something)."""
    for pattern in PROFILE:
        if match := pattern.search(clause):
            return clause[: match.start()] + clause[match.end() :]
    match = PREFERENCE.search(clause)
    if match:
        return clause[: match.start()]
    return _INTRODUCTION.sub("", clause)


def content_words(clause: str) -> list[str]:
    """The words of a masked clause that say what is asked: no placeholder, name or filler."""
    tokens = re.findall(r"<?[A-Za-z][A-Za-z']*>?", clause)
    if tokens:  # sentence case is no name
        tokens[0] = tokens[0].lower()
    return [
        t
        for t in tokens
        if t.islower() and not t.startswith("<") and t not in STOPWORDS and t not in _FILLERS and len(t) > 1
    ]


def request_pattern(request: str, values: Iterable[str]) -> str:
    """The request without the user's own: the profile facts and preferences it states left out,
    the values passed to tools and other specifics masked ("Hi, I'm Ana. Please change the email
    of customer 1001 to ana@x.org" → "Please change the email of customer <value> to <value>")."""
    masked = mask_values(request, values)
    asked = ["" if _INTRODUCED.search(c) else unstated(c).strip(" ,") for c in clauses(masked)]
    return ". ".join(c for c in asked if content_words(c))


def without_personal(text: str, values: Iterable[str] = ()) -> str:
    """``text`` as written, less what the user said about themself: a sentence that states a
    profile fact, a preference or who is speaking keeps only its clauses that ask for something;
    e-mail addresses and the given values (what was passed to tools) are masked. "Hi, I'm Dana
    and I prefer email updates. Please cancel order 7." → "Please cancel order <n>."."""
    masked = EMAIL.sub("<email>", mask_values(text, values))
    kept_sentences = []
    for found in _SENTENCE_WITH_END.finditer(masked):
        sentence = found.group().strip()
        if not sentence:
            continue
        body = sentence.rstrip(".!?。！？")
        parts = [c.strip(" ,") for c in _CLAUSE_BREAK.split(body) if c.strip(" ,")]
        kept = [unstated(c).strip(" ,") for c in parts]
        if kept == parts:
            kept_sentences.append(sentence)  # nothing of the person's in it: as written
            continue
        asked = [c for c in kept if content_words(c)]
        if asked:
            clause = ", ".join(asked)
            kept_sentences.append(clause[:1].upper() + clause[1:] + sentence[len(body) :])
    return " ".join(kept_sentences)
