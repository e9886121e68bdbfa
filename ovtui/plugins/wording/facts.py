"""What a rollout observed about the world before it acted: the facts a learned rule is conditioned on.

Facts come from the trajectory itself, never from the case: the fields of records the agent read
(the JSON answers of ``get_*``/``read_*``/``lookup_*`` tools) and the user's answer when asked to
confirm. Only values that describe a *kind* of situation are kept — booleans and short lower-case
labels such as ``basic_economy`` — never ids, names, amounts, e-mails or dates, so a condition fits
the next customer too. A fact is keyed ``subject.field`` (``reservation.refundable``) and its value
is a string (``"true"``, ``"basic_economy"``, ``"yes"``).
"""

from __future__ import annotations

import re

from ovtui.core.bounded_json import parse_json
from ovtui.core.domain import Message, ToolPart

Facts = dict[str, str]

USER_ANSWER = "user.answer"
_READ_TOOL = re.compile(r"^(get|read|lookup|find|fetch|search)_(?P<subject>[a-z][a-z0-9_]*)$")
_LABEL = re.compile(r"^[a-z][a-z_]{1,30}$")
_AFFIRMATIVE = re.compile(
    r"^\s*(yes|yeah|yep|sure|ok|okay|please do|go ahead|confirmed|correct)\b", re.IGNORECASE
)
_CONFIRM_QUESTION = re.compile(r"\bconfirm", re.IGNORECASE)


def is_lookup(tool: str) -> bool:
    """A tool that only reads (by the common naming convention); its answer is the situation."""
    return _READ_TOOL.match(tool) is not None


def _record_facts(part: ToolPart) -> Facts:
    match = _READ_TOOL.match(part.tool_name)
    if match is None or part.tool_status == "error":
        return {}
    try:
        record = parse_json(part.tool_output, source="a tool output")
    except ValueError:
        return {}
    if not isinstance(record, dict):
        return {}
    subject = match.group("subject")
    facts: Facts = {}
    for field, value in record.items():
        if isinstance(value, bool):
            facts[f"{subject}.{field}"] = "true" if value else "false"
        elif isinstance(value, str) and _LABEL.match(value) and not field.endswith("_id"):
            facts[f"{subject}.{field}"] = value
    return facts


def fact_timeline(messages: list[Message]) -> tuple[list[Facts], Facts]:
    """For every tool call in order, the facts observed before it; and every fact observed at all.

    The first observation of a key wins: what a later write returns is the outcome, not the situation.
    """
    seen: Facts = {}
    before: list[Facts] = []
    last_assistant = ""
    opened = False
    for message in messages:
        if message.role == "user" and message.text.strip():
            if opened and _CONFIRM_QUESTION.search(last_assistant) and USER_ANSWER not in seen:
                seen[USER_ANSWER] = "yes" if _AFFIRMATIVE.match(message.text) else "no"
            opened = True
            continue
        if message.role == "assistant" and message.text.strip():
            last_assistant = message.text
        for part in message.tool_parts:
            before.append(dict(seen))
            for key, value in _record_facts(part).items():
                seen.setdefault(key, value)
    return before, seen
