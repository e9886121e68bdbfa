"""The seam between a session commit and a backend's session extractor.

A backend (``Backends.session_extractor`` in ``ovtui.wiring.registry``) turns one committed
conversation into an ``Extraction``: the user's (and peers') memories to merge, and the cases to
train on. The committer (``ovtui.sessions.commit``) knows only this module: who extracts is the
registry's choice, by ``[llm] backend``.

Every case a conversation gives carries the conversation's own criteria (``CONVERSATION_CRITERIA``),
checked on what the conversation shows (``evaluate_conversation``): no grader took part, so that is
the only signal a plain conversation gives. Their kinds are what the offline learner reads of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from ovtui.core.domain import Case, CriterionResult, RubricCriterion, RubricEvaluation, ToolPart
from ovtui.memory.memory_diff import SkippedOperation
from ovtui.protocols.sessions import MemoryPolicy, SessionMessage

# The kinds of the conversation criteria: every tool call completed; the assistant answered after
# its last call.
TOOL_CALLS_COMPLETE = "tool_calls_complete"
ANSWERS_AFTER_TOOLS = "answers_after_tools"


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
    # When it happened, for a type whose files are filed by time (an event: its first message's
    # time); None: the time it is written.
    when: datetime | None = None


@dataclass
class Extraction:
    memories: list[ExtractedMemory] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    # What the extractor was given and refused (an event whose ranges name no message of the user's).
    skipped: list[SkippedOperation] = field(default_factory=list)
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class SessionExtractor(Protocol):
    async def extract(
        self, messages: list[SessionMessage], session_id: str, archive_name: str, policy: MemoryPolicy
    ) -> Extraction:
        """What ``messages`` hold worth remembering. ``policy`` says which memory types and peers
        the session allows (an extractor may ask for less; the committer filters by it again)."""
        ...


# What a plain conversation can show about any case (``evaluate_conversation`` checks them); the
# kinds are what the offline learner reads of them (never their wording).
CONVERSATION_CRITERIA = (
    RubricCriterion(
        name="tools_succeed",
        description="every tool call completes without an error",
        metadata={"kind": TOOL_CALLS_COMPLETE},
    ),
    RubricCriterion(
        name="answers_user",
        description="the assistant answers the request",
        required=False,
        metadata={"kind": ANSWERS_AFTER_TOOLS},
    ),
)


def session_case_name(name: str, session_id: str, archive_name: str) -> str:
    """A case's name made unique to its commit: the same task in two sessions is two cases."""
    return f"{name}_{session_id}_{archive_name}"[:120]


def tool_parts(messages: list[SessionMessage]) -> list[ToolPart]:
    """The tool calls of a conversation, in order."""
    return [p for m in messages if m.role in ("assistant", "tool") for p in m.to_message().tool_parts]


def case_metadata(messages: list[SessionMessage], session_id: str, archive_name: str) -> dict[str, Any]:
    failed = [p.tool_name for p in tool_parts(messages) if p.tool_status == "error"]
    return {
        "source": "session_commit",
        "session_id": session_id,
        "archive": archive_name,
        "failed_tools": failed,
    }


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
