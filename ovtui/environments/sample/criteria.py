"""Rubric criterion kinds of the sample environment: constructors and checks.

A criterion's ``metadata["kind"]`` says how it is checked; the rest of the metadata holds what the
check needs (docs/cases.md lists them). Descriptions are written as general guidance ("Always call
get_reservation before cancel_reservation"), never with case ids: the learner turns the description
of a failed criterion into a rule, and a rule that names an id would not generalise. Feedback says
what went wrong in the same general terms.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ovtui.plugins import CriterionResult, Message, RubricCriterion, ToolPart

REQUIRED_CALL = "required_call"
FORBIDDEN_CALL = "forbidden_call"
ORDER = "order"
CONFIRMED_BEFORE = "confirmed_before"
STATE = "state"
CRITERION_KINDS = (REQUIRED_CALL, FORBIDDEN_CALL, ORDER, CONFIRMED_BEFORE, STATE)

_AFFIRMATIVE = re.compile(
    r"^\s*(yes|yeah|yep|sure|ok|okay|please do|go ahead|confirmed|correct)\b", re.IGNORECASE
)


# --- the transcript a check reads --------------------------------------------------------------


@dataclass(frozen=True)
class Event:
    position: int
    role: str
    kind: Literal["text", "tool"]
    text: str = ""
    call: ToolPart | None = None


class Transcript:
    """The messages of a rollout flattened into one ordered list of texts and tool calls."""

    def __init__(self, messages: list[Message]) -> None:
        events: list[Event] = []
        for message in messages:
            for part in message.parts:
                if isinstance(part, ToolPart):
                    events.append(Event(len(events), message.role, "tool", call=part))
                else:
                    events.append(Event(len(events), message.role, "text", text=part.text))
        self.events = events

    def calls(self, tool: str) -> list[Event]:
        return [e for e in self.events if e.call is not None and e.call.tool_name == tool]

    def first_call(self, tool: str) -> int | None:
        calls = self.calls(tool)
        return calls[0].position if calls else None

    def tool_names(self) -> list[str]:
        return [e.call.tool_name for e in self.events if e.call is not None]

    def user_replies_before(self, position: int) -> list[Event]:
        """User turns after the opening request and before ``position`` (answers to questions)."""
        user_turns = [e for e in self.events if e.role == "user" and e.kind == "text"]
        return [e for e in user_turns[1:] if e.position < position]


def is_affirmative(reply: str) -> bool:
    return bool(_AFFIRMATIVE.match(reply))


# --- constructors (used by the case generator; handy for hand-written cases too) ---------------


def _criterion(name: str, description: str, kind: str, weight: float, **metadata: Any) -> RubricCriterion:
    clean = {k: v for k, v in metadata.items() if v is not None}
    return RubricCriterion(
        name=name, description=description, weight=weight, metadata={"kind": kind, **clean}
    )


def required_call(
    name: str,
    description: str,
    tool: str,
    *,
    args: dict[str, Any] | None = None,
    after: str | None = None,
    weight: float = 1.0,
) -> RubricCriterion:
    return _criterion(name, description, REQUIRED_CALL, weight, tool=tool, args=args, after=after)


def forbidden_call(
    name: str, description: str, tool: str, *, when: str | None = None, weight: float = 1.0
) -> RubricCriterion:
    return _criterion(name, description, FORBIDDEN_CALL, weight, tool=tool, when=when)


def order(
    name: str, description: str, before: str, after: list[str], *, weight: float = 1.0
) -> RubricCriterion:
    return _criterion(name, description, ORDER, weight, before=before, after=after)


def confirmed_before(name: str, description: str, tool: str, *, weight: float = 1.0) -> RubricCriterion:
    return _criterion(name, description, CONFIRMED_BEFORE, weight, tool=tool)


def state(
    name: str, description: str, table: str, key: str, field: str, equals: Any, *, weight: float = 1.0
) -> RubricCriterion:
    return _criterion(name, description, STATE, weight, table=table, key=key, field=field, equals=equals)


# --- checks ------------------------------------------------------------------------------------

Check = Callable[[dict[str, Any], Transcript, dict[str, Any]], tuple[bool, list[str], list[str]]]


def _args_match(call: ToolPart, expected: dict[str, Any]) -> bool:
    return all(str(call.tool_input.get(k)) == str(v) for k, v in expected.items())


def _check_required(
    meta: dict[str, Any], transcript: Transcript, db: dict[str, Any]
) -> tuple[bool, list[str], list[str]]:
    tool = str(meta["tool"])
    calls = [e for e in transcript.calls(tool) if e.call is not None and e.call.tool_status == "completed"]
    if not calls:
        attempted = transcript.calls(tool)
        why = f"{tool} was called but failed" if attempted else f"{tool} was never called"
        return False, [why], []
    expected = meta.get("args") or {}
    matching = [e for e in calls if e.call is not None and _args_match(e.call, expected)]
    if not matching:
        wrong = ", ".join(sorted(expected))
        return False, [f"{tool} was called with the wrong {wrong}"], [f"{tool} called {len(calls)} time(s)"]
    trigger = meta.get("after")
    if trigger:
        trigger_at = transcript.first_call(str(trigger))
        if trigger_at is None or all(e.position < trigger_at for e in matching):
            return False, [f"{tool} was not called after {trigger}"], []
    return True, [], [f"{tool} called"]


def _check_forbidden(
    meta: dict[str, Any], transcript: Transcript, db: dict[str, Any]
) -> tuple[bool, list[str], list[str]]:
    tool = str(meta["tool"])
    if not transcript.calls(tool):
        return True, [], []
    when = f" although {meta['when']}" if meta.get("when") else ""
    return False, [f"{tool} was called{when}; it must not be in this situation"], [f"{tool} called"]


def _check_order(
    meta: dict[str, Any], transcript: Transcript, db: dict[str, Any]
) -> tuple[bool, list[str], list[str]]:
    before = str(meta["before"])
    before_at = transcript.first_call(before)
    feedback: list[str] = []
    for later in meta.get("after") or []:
        later_at = transcript.first_call(str(later))
        if later_at is None:
            continue
        if before_at is None:
            feedback.append(f"{later} was called without calling {before} first")
        elif before_at > later_at:
            feedback.append(f"{later} was called before {before}")
    return not feedback, feedback, [" > ".join(transcript.tool_names())] if feedback else []


def _check_confirmed(
    meta: dict[str, Any], transcript: Transcript, db: dict[str, Any]
) -> tuple[bool, list[str], list[str]]:
    tool = str(meta["tool"])
    at = transcript.first_call(tool)
    if at is None:
        return True, [], []
    replies = transcript.user_replies_before(at)
    if any(is_affirmative(e.text) for e in replies):
        return True, [], []
    if replies:
        return False, [f"{tool} was called although the user did not confirm"], [replies[-1].text]
    return False, [f"{tool} was called before the user explicitly confirmed"], []


def _check_state(
    meta: dict[str, Any], transcript: Transcript, db: dict[str, Any]
) -> tuple[bool, list[str], list[str]]:
    table, key, field = str(meta["table"]), str(meta["key"]), str(meta["field"])
    record = db.get(table, {}).get(key)
    subject = table.rstrip("s")
    if record is None:
        return False, [f"the {subject} no longer exists"], []
    actual, expected = record.get(field), meta.get("equals")
    if actual == expected:
        return True, [], []
    # Show enum-like values (status, cabin); hide personal or case-specific ones (emails, dates, amounts).
    if isinstance(expected, str) and re.fullmatch(r"[a-z_]+", expected):
        return False, [f"the {subject}'s {field} is {actual!r}, expected {expected!r}"], []
    return False, [f"the {subject}'s {field} does not have the expected value"], []


CHECKS: dict[str, Check] = {
    REQUIRED_CALL: _check_required,
    FORBIDDEN_CALL: _check_forbidden,
    ORDER: _check_order,
    CONFIRMED_BEFORE: _check_confirmed,
    STATE: _check_state,
}


def check_criterion(
    criterion: RubricCriterion, transcript: Transcript, db: dict[str, Any]
) -> CriterionResult:
    kind = str(criterion.metadata.get("kind", ""))
    check = CHECKS.get(kind)
    if check is None:
        return CriterionResult(
            criterion_name=criterion.name,
            passed=False,
            score=0.0,
            feedback=[f"unknown criterion kind {kind!r}; known: {', '.join(CRITERION_KINDS)}"],
        )
    try:
        passed, feedback, evidence = check(criterion.metadata, transcript, db)
    except KeyError as exc:
        passed, feedback, evidence = False, [f"criterion metadata lacks {exc.args[0]!r}"], []
    return CriterionResult(
        criterion_name=criterion.name,
        passed=passed,
        score=1.0 if passed else 0.0,
        feedback=feedback,
        evidence=evidence,
        metadata={"kind": kind},
    )
