"""A scripted model for the fake OpenAI server that plays every stage a session commit needs.

The stages are told apart by the answer schema each one asks for: the session extraction (its
schema lists the user memory types), the trajectory extraction, the experience proposal and the
merge of the training path. The session extraction is answered per session (the session id is in
the prompt's "## Conversation (session …)" heading): a scripted reply or function for the sessions
a test names, else the canonical answer for ``session_support.CONVERSATION``.

Only the standard library is used, so ``bench/`` can run it as well.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from .openai_server import RecordedRequest, Reply

TRAJECTORY = "## Task\n- change a booking\n## Steps\n1. change_flight\n## Outcome\n- failure"
GUIDANCE = (
    "## Situation\n- A customer asks to change or cancel a booking\n"
    "## Approach\n- get_reservation first\n- ask for explicit confirmation before acting\n"
    "## Reflect\n- NEVER act on a booking before the customer confirms"
)
PROFILE_LINE = "- The user's name is Ana Ruiz."
PREFERENCE_LINE = "- The user prefers window seats on flights."
CASE_RUBRIC = {
    "name": "cancel_order_rubric",
    "description": "the order the user named is cancelled and the user is told",
    "criteria": [{"name": "order_cancelled", "description": "cancel_order succeeds", "required": True}],
}

_SESSION = re.compile(r"## Conversation \(session ([^)\s]+)\)")

SessionScript = Callable[[RecordedRequest], Reply]


SCHEMA_IN_PROMPT = "matching this JSON schema:\n"


def _schema(request: RecordedRequest) -> dict[str, Any]:
    """The answer schema: in ``response_format``, or (an endpoint without json_schema) at the end of
    the system message."""
    fmt = request.body.get("response_format") or {}
    given = (fmt.get("json_schema") or {}).get("schema")
    if given:
        return dict(given)
    system = str((request.messages[:1] or [{}])[0].get("content") or "")
    _, marker, text = system.rpartition(SCHEMA_IN_PROMPT)
    return dict(json.loads(text)) if marker else {}


def session_of(request: RecordedRequest) -> str | None:
    found = _SESSION.search(request.prompt_text)
    return found.group(1) if found else None


def conversation_answer() -> dict[str, Any]:
    """What a model makes of ``session_support.CONVERSATION``: one memory of every user type."""
    return {
        "profile": [{"content": PROFILE_LINE}],
        "preferences": [{"topic": "seating", "content": PREFERENCE_LINE}],
        "entities": [
            {
                "category": "order",
                "name": "order_1234",
                "content": "- An order of the user's; cancelled at the user's request.",
            }
        ],
        "events": [
            {
                "event_name": "order_cancellation",
                "goal": "cancel an order",
                "summary": "On 2026-11-30 the user had order 1234 cancelled.",
                "ranges": "0-3",
                "content": "On 2026-11-30 the user asked the agent to cancel order 1234; it was cancelled.",
            }
        ],
        "cases": [
            {
                "case_name": "cancel_order",
                "task_signature": "cancel the order the user names and confirm it",
                "input": json.dumps({"summary": "the user asks to cancel one order"}),
                "rubric": json.dumps(CASE_RUBRIC),
                "evidence": "the agent looked the order up, then cancelled it",
                "summary": "order cancellation: lookup, cancel, confirm; it succeeded",
                "content": "# cancel_order",
            }
        ],
    }


def training_model(request: RecordedRequest) -> Reply:
    """The training stages: one trajectory per rollout, one experience per proposal and per merge."""
    properties = _schema(request)["properties"]
    if "trajectories" in properties:
        return Reply.json(
            {
                "trajectories": [
                    {"trajectory_name": "booking_change", "outcome": "failure", "content": TRAJECTORY}
                ]
            }
        )
    item = properties["experiences"]["items"]["properties"]
    if "source_gradients" in item:  # the merge: one experience from every proposal of the batch
        proposals = item["source_gradients"]["items"]["maximum"] + 1
        merged = {
            "experience_name": "booking_changes",
            "content": GUIDANCE,
            "source_gradients": list(range(proposals)),
            "rationale": "one intent",
        }
        return Reply.json({"experiences": [merged], "deletes": []})
    proposal = {
        "experience_name": "booking_changes",
        "content": GUIDANCE,
        "rationale": "acted before confirming",
    }
    return Reply.json({"experiences": [proposal]})


USER_TYPES = frozenset({"profile", "preferences", "entities", "events", "cases"})


def is_session_extraction(request: RecordedRequest) -> bool:
    return bool(USER_TYPES.intersection(_schema(request).get("properties", {})))


class SessionModel:
    """``FakeOpenAIServer(SessionModel({"s1": lambda r: Reply.json({...})}))``; ``script`` may be
    extended while the server runs (``model.script["s2"] = ...``)."""

    def __init__(self, script: dict[str, SessionScript] | None = None) -> None:
        self.script: dict[str, SessionScript] = dict(script or {})
        self.extraction_calls: dict[str, int] = {}
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        if not is_session_extraction(request):
            return training_model(request)
        session = session_of(request) or ""
        with self._lock:
            self.extraction_calls[session] = self.extraction_calls.get(session, 0) + 1
        handler = self.script.get(session)
        return handler(request) if handler is not None else Reply.json(conversation_answer())
