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
from ovtui.plugins.wording.personal import (
    PREFERENCE,
    PROFILE,
    TRAILING_FILLER,
    clauses,
    content_words,
    request_pattern,
)

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
SIGNATURE_WORDS = 6
MAX_ENTITY_VALUE = 120
TOPIC_WORDS = 4


def _stated(text: str) -> str:
    text = TRAILING_FILLER.sub("", text).strip(" ,")
    return text[:1].upper() + text[1:]


def _profile_fact(clause: str) -> str | None:
    for pattern in PROFILE:
        if match := pattern.search(clause):
            return _stated(clause[match.start() : match.end()])
    return None


def _user_facts(message: SessionMessage) -> list[ExtractedMemory]:
    found: list[ExtractedMemory] = []
    for clause in clauses(message.text):
        fact = _profile_fact(clause)
        if fact is not None:
            found.append(ExtractedMemory("profile", None, {"content": f"- {fact}"}, message.peer_id))
        elif match := PREFERENCE.search(clause):
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


def tool_values(tools: list[ToolPart]) -> list[str]:
    """What the agent passed to its tools, as text: the user's values, masked in a pattern."""
    return [str(v) for p in tools for v in p.tool_input.values()]


def request_signature(request: str, tools: list[ToolPart]) -> str:
    """What the request asks for in a few of its own words: the content words of its pattern
    (``change_email_customer``); the tool sequence when no word is left."""
    kept = [w for c in clauses(request_pattern(request, tool_values(tools))) for w in content_words(c)]
    if not kept:
        kept = list(dict.fromkeys(p.tool_name for p in tools))
    return slugify(" ".join(kept[:SIGNATURE_WORDS]), fallback="conversation")


def asks_something(text: str) -> bool:
    """Whether a user's message says what they want (a word beyond greetings and courtesy)."""
    return any(w not in _SMALL_TALK for c in clauses(text) for w in content_words(c))


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
            "request_pattern": request_pattern(request, tool_values(tools)),
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
