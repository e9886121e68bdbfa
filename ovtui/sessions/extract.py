"""What a committed conversation holds worth remembering, found without a model.

The offline extractor is deliberately limited, and real within its limits (README: Sessions):

- **cases**: a conversation in which the assistant used tools is one case — the user's request,
  the tool sequence with each call's status, and the outcome (the assistant's last words; a tool
  error makes it a failure);
- **profile** facts the user states about themself: "my name is …", "I am a/an …", "I work as/at
  …", "I live in …";
- **preferences** the user states: "I prefer …", "I like …", "I don't like …", "always …",
  "never …", "please always/never …", one preference per sentence, its topic from the first words;
- **entities**: the identifying values the agent passed to its tools (arguments named ``*_id``,
  ``id``, ``name``, ``email``, ``code``, ``number``), one entity per value, its category from the
  argument name.

Events, paraphrase, facts spread over several turns and anything implied are the LLM backend's
job. Messages with a ``peer_id`` are attributed to that peer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from ovtui.domain import Case, CriterionResult, Rubric, RubricCriterion, RubricEvaluation, ToolPart
from ovtui.sessions.models import SessionMessage
from ovtui.workspace.paths import slugify

_SENTENCE = re.compile(r"[^.!?\n。！？]+")
_PROFILE = [
    re.compile(r"\bmy name is ([^,;]+)", re.I),
    re.compile(r"\bi am (?:an?|the) ([^,;]+)", re.I),
    re.compile(r"\bi work (?:as|at|for) ([^,;]+)", re.I),
    re.compile(r"\bi live in ([^,;]+)", re.I),
]
_PREFERENCE = re.compile(
    r"\b(?:i (?:really )?(?:prefer|like|love|hate|don't like|do not like|want)"
    r"|(?:please )?(?:always|never))\b\s+(.+)",
    re.I,
)
_ENTITY_KEYS = re.compile(r"^(?:.*_id|id|name|.*_name|email|code|.*_code|number|.*_number)$", re.I)
MAX_ENTITY_VALUE = 120
TOPIC_WORDS = 4


@dataclass
class ExtractedMemory:
    """One memory a conversation gives: its type, its name (None for a one-file type), the fields
    to merge, and whose it is (a peer's id, or None for the user).

    ``merge`` says how it meets its file: ``lines`` (the offline extractor: the content's lines the
    file lacks are appended) or ``ops`` (a model's operation: every field by its merge op, SEARCH/
    REPLACE blocks included). ``seen`` is, for ``ops``, the file (content and fields) as the model
    saw it, or None when it saw no file."""

    memory_type: str
    name: str | None
    fields: dict[str, Any]
    peer_id: str | None = None
    merge: Literal["lines", "ops"] = "lines"
    seen: dict[str, Any] | None = None
    # Trajectories this memory produced (a case's runs): linked from it in the same write.
    produced: list[str] = field(default_factory=list)


@dataclass
class Extraction:
    memories: list[ExtractedMemory] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def _user_facts(message: SessionMessage) -> list[ExtractedMemory]:
    found: list[ExtractedMemory] = []
    for sentence in _sentences(message.text):
        for pattern in _PROFILE:
            match = pattern.search(sentence)
            if match:
                found.append(ExtractedMemory("profile", None, {"content": f"- {sentence}"}, message.peer_id))
                break
        else:
            match = _PREFERENCE.search(sentence)
            if match:
                topic = slugify(" ".join(match.group(1).split()[:TOPIC_WORDS]), fallback="preference")
                found.append(
                    ExtractedMemory(
                        "preferences", topic, {"topic": topic, "content": f"- {sentence}"}, message.peer_id
                    )
                )
    return found


def _entities(message: SessionMessage) -> list[ExtractedMemory]:
    found = []
    for part in message.to_message().tool_parts:
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


def _tool_parts(messages: list[SessionMessage]) -> list[ToolPart]:
    return [p for m in messages if m.role in ("assistant", "tool") for p in m.to_message().tool_parts]


# What a plain conversation can show about any case (``evaluate_conversation`` checks them).
CONVERSATION_CRITERIA = (
    RubricCriterion(name="tools_succeed", description="every tool call completes without an error"),
    RubricCriterion(name="answers_user", description="the assistant answers the request", required=False),
)


def session_case_name(name: str, session_id: str, archive_name: str) -> str:
    """A case's name made unique to its commit: the same task in two sessions is two cases."""
    return f"{name}_{session_id}_{archive_name}"[:120]


def case_metadata(messages: list[SessionMessage], session_id: str, archive_name: str) -> dict[str, Any]:
    failed = [p.tool_name for p in _tool_parts(messages) if p.tool_status == "error"]
    return {
        "source": "session_commit",
        "session_id": session_id,
        "archive": archive_name,
        "failed_tools": failed,
    }


def case_of(messages: list[SessionMessage], session_id: str, archive_name: str) -> Case | None:
    """The conversation as a training case, when the assistant used tools in it."""
    tools = _tool_parts(messages)
    if not tools:
        return None
    request = next((m.text for m in messages if m.role == "user" and m.text.strip()), "")
    if not request:
        return None
    answer = next((m.text for m in reversed(messages) if m.role == "assistant" and m.text.strip()), "")
    signature = slugify(" ".join(request.split()[:8]), fallback="conversation")
    sequence = " → ".join(f"{p.tool_name}{' (error)' if p.tool_status == 'error' else ''}" for p in tools)
    rubric = Rubric(
        name=f"{signature}_rubric",
        description="from a committed session",
        criteria=list(CONVERSATION_CRITERIA),
    )
    return Case(
        name=session_case_name(signature, session_id, archive_name),
        task_signature=signature,
        input={"user_query": request, "tool_sequence": sequence, "outcome": answer},
        rubric=rubric,
        metadata=case_metadata(messages, session_id, archive_name),
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


def evaluate_conversation(case: Case, messages: list[SessionMessage]) -> RubricEvaluation:
    """The case's rubric checked on what the conversation shows: did every tool call complete, and
    did the assistant answer after its last tool call. No grader took part, so this is the only
    signal a plain conversation gives; a training session brings its own OutcomeEvaluation."""
    failed = case.metadata.get("failed_tools") or []
    last_tool = max((i for i, m in enumerate(messages) if m.to_message().tool_parts), default=-1)
    answered = any(m.role == "assistant" and m.text.strip() for m in messages[last_tool + 1 :])
    results = [
        CriterionResult(
            criterion_name="tools_succeed",
            passed=not failed,
            score=0.0 if failed else 1.0,
            feedback=[f"tool call failed: {name}" for name in failed],
        ),
        CriterionResult(
            criterion_name="answers_user",
            passed=answered,
            score=1.0 if answered else 0.0,
            feedback=[] if answered else ["the assistant did not answer after its last tool call"],
        ),
    ]
    passed = not failed
    return RubricEvaluation(
        passed=passed,
        score=sum(r.score for r in results) / len(results),
        criterion_results=results,
        feedback=[f for r in results for f in r.feedback],
        metadata={"source": "session_conversation"},
    )
