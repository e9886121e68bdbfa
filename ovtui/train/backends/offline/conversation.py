"""What the offline learner takes from a conversation case: a session commit's case.

A conversation case is known by its rubric, not by where it came from: a criterion of kind
``tool_calls_complete`` (every tool call completed; ``answers_after_tools``: the assistant answered
after its last call) — the structured evaluation a committed conversation carries
(``ovtui.plugins.session_extraction``). One tool call, or a failed one, is then
worth learning from:

- all criteria met: one ``answered`` lesson — for a request like <the task's words>, the calls in
  order with the *names* of their arguments, under the facts the agent observed;
- the tool-call criterion failed: one ``on_error`` lesson per failed call — the tool, the kind of
  error its answer names (``text.error_kind``) and what the agent did next in the trajectory (another
  call and how it went, a question to the user, a reply without another call, nothing);
- the answer criterion failed: ALWAYS reply to the user after the last call (``reply``).

Only the trajectory and the criteria's names and pass/fail are read, never the grader's feedback;
the user's values (what was passed to tools, ids, e-mails, dates, names) never reach a lesson.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ovtui.plugins import TOOL_CALLS_COMPLETE, Case, Message, ToolPart, parse_json
from ovtui.plugins.wording.facts import Facts
from ovtui.plugins.wording.lessons import ASK_STEP, Lesson
from ovtui.plugins.wording.text import error_kind, mask_values
from ovtui.train.backends.offline.steps import ASK_TO_CONFIRM, rollout_steps, tool_failed

_ARG = re.compile(r"[^\w.\-]+")
# A capitalised word that opens no sentence or phrase reads as a name ("my friend Alice").
_INNER_CAPITAL = re.compile(r"(?<=[^.!?:\s]) +[A-Z][a-z]+\b")


def is_conversation(case: Case) -> bool:
    return any(c.metadata.get("kind") == TOOL_CALLS_COMPLETE for c in case.rubric.criteria)


def _arg_names(names: Iterable[str]) -> str:
    """Argument names as a lesson shows them (anything but a word character made ``_``)."""
    return ", ".join(sorted(_ARG.sub("_", str(k)).strip("_") or "arg" for k in names))


def _values(messages: list[Message]) -> list[str]:
    """Every value the agent passed to a tool (the user's specifics), as text."""
    return [str(v) for m in messages for p in m.tool_parts for v in p.tool_input.values()]


def _record_values(messages: list[Message]) -> list[str]:
    """The text values of the records tools answered with (a holder's name, an address)."""
    found = []
    for part in (p for m in messages for p in m.tool_parts):
        try:
            record = parse_json(part.tool_output, source="a tool output")
        except ValueError:
            continue
        if isinstance(record, dict):
            found += [v for v in record.values() if isinstance(v, str)]
    return found


def request_example(case: Case, request: str, messages: list[Message]) -> str:
    """The request as an example: the case's ``request_pattern`` when it has one (the extractor's
    request without the user's statements), with the user's values masked — what was passed to
    tools or read in their records, specifics, names."""
    return without_user_values(str(case.input.get("request_pattern") or "") or request, messages)


def without_user_values(text: str, messages: list[Message]) -> str:
    """``text`` with what the conversation holds of the user's masked: values passed to tools or
    read in their records, specifics, names."""
    masked = mask_values(text, [*_values(messages), *_record_values(messages)])
    return _INNER_CAPITAL.sub(" <name>", masked)


def _general(facts: Facts, messages: list[Message]) -> Facts:
    """The facts whose value is no word the user wrote nor a value passed to a tool: a record's
    ``"status": "pending"`` stays, a lower-case name the user gave does not."""
    said = " ".join([*(m.text for m in messages if m.role == "user"), *_values(messages)]).lower()
    words = set(re.findall(r"[a-z0-9_]+", said))
    return {k: v for k, v in facts.items() if v.lstrip("!") not in words or v in ("true", "false")}


def answered_lesson(words: str, messages: list[Message], facts: Facts) -> list[Lesson]:
    """The calls that answered the request (confirmations asked on the way included), under the
    facts observed that are no value of the user's."""
    steps = [s for s in rollout_steps(messages) if s.ok and (s.kind == "tool" or s.name == ASK_TO_CONFIRM)]
    if not any(s.kind == "tool" for s in steps):
        return []
    tools = tuple(ASK_STEP if s.kind == "ask" else s.name for s in steps)
    args = tuple(_arg_names(s.arg_kinds) for s in steps)
    return [Lesson("answered", tools, detail=(words, *args)).with_facts(_general(facts, messages))]


@dataclass(frozen=True)
class _Event:
    kind: str  # "call", "ask" (a user turn after the request) or "reply" (the assistant's words)
    part: ToolPart | None = None


def _events(messages: list[Message]) -> list[_Event]:
    events: list[_Event] = []
    opened = False
    for message in messages:
        if message.role == "user":
            if message.text.strip():
                if opened:
                    events.append(_Event("ask"))
                opened = True
            continue
        if message.role == "assistant" and message.text.strip():
            events.append(_Event("reply"))
        events.extend(_Event("call", p) for p in message.tool_parts)
    return events


def _what_next(failed: ToolPart, later: list[_Event]) -> str:
    step = next((e for e in later if e.kind != "reply"), None)
    if step is None:
        return "replied without another tool call" if later else "stopped without a reply"
    if step.kind == "ask" or step.part is None:
        return "asked the user"
    part = step.part
    again = " again" if part.tool_name == failed.tool_name else ""
    how = "failed too" if tool_failed(part) else "succeeded"
    return f"called {part.tool_name}({_arg_names(part.tool_input)}){again}, which {how}"


def error_lessons(messages: list[Message]) -> list[Lesson]:
    """For every failed call: the kind of error and what the agent did next."""
    events = _events(messages)
    values = _values(messages)
    lessons = []
    for index, event in enumerate(events):
        part = event.part
        if part is None or not tool_failed(part):
            continue
        kind = error_kind(part.tool_output, [*values, *map(str, part.tool_input.values())])
        then = _what_next(part, events[index + 1 :])
        lessons.append(Lesson("on_error", (part.tool_name,), detail=(kind, then)))
    return lessons


def reply_lessons(messages: list[Message]) -> list[Lesson]:
    """The assistant said nothing after its last call: reply after that call."""
    calls = [e.part for e in _events(messages) if e.part is not None]
    return [Lesson("reply", (calls[-1].tool_name,))] if calls else []
