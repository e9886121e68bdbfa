"""What a committed conversation holds worth remembering, found without a model.

The offline extractor is deliberately limited, and real within its limits (README: Sessions):

- **cases**: a conversation in which the assistant's tools ran (a call that finished with an input
  or an output; a bare tool part is no work) is one case — the user's request,
  the tool sequence with each call's status, and the outcome (the assistant's last words; a tool
  error makes it a failure), with its ``evidence`` (OpenViking requires one): the tools the agent
  used and whether every call completed, no values. Its ``request_pattern`` is the request without
  the user's own (statements and values; what the offline learner shows as its example) and its task
  signature a few of that pattern's words (``request_signature``), so the same kind of request from
  many sessions trains one experience; its rubric's criteria carry the kinds the offline learner reads
  (``ovtui.train.backends.offline.conversation``);
- **profile** facts the user states about themself: "my name is …", "I am a/an …", "I work as/at
  …", "I live in …";
- **preferences** the user states: "I prefer …", "I like …", "I don't like …", "always …",
  "never …", "please always/never …", its topic from the first words; filed under whose it is (the
  user's own under the workspace user, a peer's under the peer: ``preferences/<user>/<topic>.md``).

A profile fact or preference keeps only the clause that states it, from its opening words ("my
name is", "I prefer", "please always") to the end of the clause, first letter capitalised: "Hi, my
name is Alice, nice to meet you" gives ``- My name is Alice``; "Oh, I prefer window seats, thanks"
gives ``- I prefer window seats``. Clauses end at ";" and at "and"/"but" before "I"/"my" ("My name
is Ada and I prefer aisle seats" gives one of each); a profile fact also ends at a comma (a
preference does not: "I prefer trains, buses and ferries" is one). The user's own words are kept,
not paraphrased, so the fact stays theirs;
- **entities**: the identifying values the agent passed to its tools in calls that completed (a
  failed call's values may name nothing that exists; arguments named ``*_id``,
  ``id``, ``name``, ``email``, ``code``, ``number``), one entity per value, its category from the
  argument name.

Events, paraphrase, facts spread over several turns and anything implied are the LLM backend's
job. Messages with a ``peer_id`` are attributed to that peer.
"""

from __future__ import annotations

import re

from ovtui.plugins import (
    CONVERSATION_CRITERIA,
    Case,
    ExtractedMemory,
    Extraction,
    MemoryPolicy,
    Rubric,
    SessionMessage,
    ToolPart,
    case_metadata,
    session_case_name,
    slugify,
    tool_parts,
)
from ovtui.plugins.wording.text import STOPWORDS, mask_values

_SENTENCE = re.compile(r"[^.!?\n。！？]+")
_PROFILE = [
    re.compile(r"\bmy name is ([^,;]+)", re.I),
    re.compile(r"\bi am (?:an?|the) ([^,;]+)", re.I),
    re.compile(r"\bi work (?:as|at|for) ([^,;]+)", re.I),
    re.compile(r"\bi live in ([^,;]+)", re.I),
]
# "I am Ana Silva, customer C1234": who is asking, not what (a capital or a masked value follows:
# "I am looking to cancel" still asks something).
_INTRODUCTION = re.compile(r"^(?i:(?:hi|hello|hey)\b[\s,!]*)?(?i:i am|i'm|this is|it's)\s+(?:[A-Z]|<)")
_PREFERENCE = re.compile(
    r"\b(?:i (?:really )?(?:prefer|like|love|hate|don't like|do not like|want)"
    r"|(?:please )?(?:always|never))\b\s+(.+)",
    re.I,
)
# Where one statement ends inside a sentence, and what closes one without adding to it.
_CLAUSE_BREAK = re.compile(r";|,?\s+\b(?:and|but)\s+(?=(?:i|my)\b)", re.I)
_TRAILING_FILLER = re.compile(r"(?:[\s,]+(?:thanks|thank you|please|if possible|by the way))+\s*$", re.I)
# Words that say nothing about what a request asks for (besides the learner's stopwords).
_FILLERS = frozenset({"hey", "ok", "okay", "also", "want", "need", "help", "wanted", "there", "am"})
# What a greeting or a courtesy says: a message of these words only is not a request.
_SMALL_TALK = frozenset(
    {
        "hi",
        "hello",
        "hallo",
        "hiya",
        "howdy",
        "greetings",
        "morning",
        "afternoon",
        "evening",
        "good",
        "thanks",
        "thank",
        "cheers",
        "great",
        "fine",
        "nice",
        "doing",
        "yes",
        "yeah",
        "sure",
    }
)
SIGNATURE_WORDS = 6
_ENTITY_KEYS = re.compile(r"^(?:.*_id|id|name|.*_name|email|code|.*_code|number|.*_number)$", re.I)
MAX_ENTITY_VALUE = 120
TOPIC_WORDS = 4


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def _clauses(text: str) -> list[str]:
    return [c.strip(" ,") for s in _sentences(text) for c in _CLAUSE_BREAK.split(s) if c.strip(" ,")]


def _stated(text: str) -> str:
    text = _TRAILING_FILLER.sub("", text).strip(" ,")
    return text[:1].upper() + text[1:]


def _profile_fact(clause: str) -> str | None:
    for pattern in _PROFILE:
        if match := pattern.search(clause):
            return _stated(clause[match.start() : match.end()])
    return None


def _unstated(clause: str) -> str:
    """A clause without the profile fact or preference it states (what is left asks for something);
    nothing of a self-introduction."""
    if _INTRODUCTION.search(clause):
        return ""
    for pattern in _PROFILE:
        if match := pattern.search(clause):
            return clause[: match.start()] + clause[match.end() :]
    match = _PREFERENCE.search(clause)
    return clause[: match.start()] if match else clause


def _user_facts(message: SessionMessage) -> list[ExtractedMemory]:
    found: list[ExtractedMemory] = []
    for clause in _clauses(message.text):
        fact = _profile_fact(clause)
        if fact is not None:
            found.append(ExtractedMemory("profile", None, {"content": f"- {fact}"}, message.peer_id))
        elif match := _PREFERENCE.search(clause):
            topic = slugify(" ".join(match.group(1).split()[:TOPIC_WORDS]), fallback="preference")
            content = f"- {_stated(clause[match.start() :])}"
            found.append(
                ExtractedMemory("preferences", topic, {"topic": topic, "content": content}, message.peer_id)
            )
    return found


def _ran(part: ToolPart) -> bool:
    """A call that ran: it finished, and it was given or returned something (a bare tool part,
    a name and nothing else, shows no work)."""
    return part.tool_status in ("completed", "error") and bool(part.tool_input or part.tool_output.strip())


def _entities(message: SessionMessage) -> list[ExtractedMemory]:
    found = []
    for part in message.to_message().tool_parts:
        if part.tool_status != "completed":
            continue  # a failed call's values (a booking not found) name nothing that exists
        for key, value in part.tool_input.items():
            if not (isinstance(value, str | int) and not isinstance(value, bool) and _ENTITY_KEYS.match(key)):
                continue
            text = str(value).strip()
            if not text or len(text) > MAX_ENTITY_VALUE:
                continue
            category = slugify(key, fallback="thing")
            name = slugify(text, fallback="entity")
            content = f"- `{key}` = `{text}` (passed to `{part.tool_name}`)"
            found.append(
                ExtractedMemory("entities", name, {"category": category, "name": name, "content": content})
            )
    return found


def _content_words(clause: str) -> list[str]:
    """The words of a masked clause that say what is asked: no placeholder, name or filler."""
    tokens = re.findall(r"<?[A-Za-z][A-Za-z']*>?", clause)
    if tokens:  # sentence case is no name
        tokens[0] = tokens[0].lower()
    return [
        t
        for t in tokens
        if t.islower() and not t.startswith("<") and t not in STOPWORDS and t not in _FILLERS and len(t) > 1
    ]


def request_pattern(request: str, tools: list[ToolPart]) -> str:
    """The request without the user's own: the profile facts and preferences it states left out,
    the values passed to tools and other specifics masked ("Hi, I'm Ana. Please change the email
    of customer 1001 to ana@x.org" → "Please change the email of customer <value> to <value>")."""
    masked = mask_values(request, [str(v) for p in tools for v in p.tool_input.values()])
    asked = [_unstated(c).strip(" ,") for c in _clauses(masked)]
    return ". ".join(c for c in asked if _content_words(c))


def request_signature(request: str, tools: list[ToolPart]) -> str:
    """What the request asks for in a few of its own words: the content words of its pattern
    (``change_email_customer``); the tool sequence when no word is left."""
    kept = [w for c in _clauses(request_pattern(request, tools)) for w in _content_words(c)]
    if not kept:
        kept = list(dict.fromkeys(p.tool_name for p in tools))
    return slugify(" ".join(kept[:SIGNATURE_WORDS]), fallback="conversation")


def asks_something(text: str) -> bool:
    """Whether a user's message says what they want (a word beyond greetings and courtesy)."""
    return any(w not in _SMALL_TALK for c in _clauses(text) for w in _content_words(c))


def case_request(messages: list[SessionMessage]) -> str:
    """The request of a conversation, read whole: its first user message that asks something (a
    greeting before it is not the request, an answer to the assistant's question after it is not
    either), else its first user text; the same whether the messages came in one batch or a turn
    at a time."""
    said = [m.text for m in messages if m.role == "user" and m.text.strip()]
    return next((text for text in said if asks_something(text)), said[0] if said else "")


def case_of(messages: list[SessionMessage], session_id: str, archive_name: str) -> Case | None:
    """The conversation as a training case, when the assistant used tools in it."""
    tools = tool_parts(messages)
    if not any(_ran(part) for part in tools):
        return None
    request = case_request(messages)
    if not request:
        return None
    answer = next((m.text for m in reversed(messages) if m.role == "assistant" and m.text.strip()), "")
    signature = request_signature(request, tools)
    sequence = " → ".join(f"{p.tool_name}{' (error)' if p.tool_status == 'error' else ''}" for p in tools)
    rubric = Rubric(
        name=f"{signature}_rubric",
        description="from a committed session",
        criteria=list(CONVERSATION_CRITERIA),
    )
    names = ", ".join(dict.fromkeys(p.tool_name for p in tools))
    failed = any(p.tool_status == "error" for p in tools)
    evidence = (
        f"In a committed session the agent handled the request with {names}; "
        f"{'a tool call failed' if failed else 'every tool call completed'}."
    )
    return Case(
        name=session_case_name(signature, session_id, archive_name),
        task_signature=signature,
        input={
            "user_query": request,
            "request_pattern": request_pattern(request, tools),
            "tool_sequence": sequence,
            "outcome": answer,
        },
        rubric=rubric,
        metadata={**case_metadata(messages, session_id, archive_name), "evidence": evidence},
    )


def _unique(memories: list[ExtractedMemory]) -> list[ExtractedMemory]:
    seen: set[tuple[str, str | None, str | None, str]] = set()
    out = []
    for memory in memories:
        key = (memory.memory_type, memory.name, memory.peer_id, str(memory.fields.get("content")))
        if key not in seen:
            seen.add(key)
            out.append(memory)
    return out


def extract_offline(messages: list[SessionMessage], session_id: str, archive_name: str) -> Extraction:
    extraction = Extraction()
    for message in messages:
        if message.role == "user":
            extraction.memories += _user_facts(message)
        if message.role in ("assistant", "tool"):
            extraction.memories += _entities(message)
    extraction.memories = _unique(extraction.memories)
    case = case_of(messages, session_id, archive_name)
    if case is not None:
        extraction.cases.append(case)
    return extraction


class OfflineSessionExtractor:
    """The offline backend's SessionExtractor: ``extract_offline``, the policy applied by the committer."""

    async def extract(
        self, messages: list[SessionMessage], session_id: str, archive_name: str, policy: MemoryPolicy
    ) -> Extraction:
        return extract_offline(messages, session_id, archive_name)
