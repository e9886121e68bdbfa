"""Rollouts cut to the limits of ``ovtui.core.bounds`` by field, before they become trajectories.

Apart from ``ovtui.core.bounds`` because it needs the domain models, which the workspace, the config and
the CLI's light commands (that import the limits) do not load.
"""

from __future__ import annotations

from ovtui.core.bounds import (
    MAX_FIELD_CHARS,
    MAX_MESSAGE_PARTS,
    MAX_PART_TEXT_CHARS,
    MAX_QUERY_CHARS,
    MAX_ROLLOUT_MESSAGES,
    MAX_TOOL_NAME_CHARS,
    cut_text,
    cut_value,
    marker,
)
from ovtui.core.domain import Message, Part, Rollout, TextPart


def bound_part(part: Part) -> Part:
    """``part`` with each text field cut (the same object when all fit)."""
    if isinstance(part, TextPart):
        text = cut_text(part.text, MAX_PART_TEXT_CHARS)
        return part if text is part.text else part.model_copy(update={"text": text})
    update = {
        "tool_id": cut_text(part.tool_id, MAX_TOOL_NAME_CHARS),
        "tool_name": cut_text(part.tool_name, MAX_TOOL_NAME_CHARS),
        "tool_input": cut_value(part.tool_input, MAX_PART_TEXT_CHARS),
        "tool_output": cut_text(part.tool_output, MAX_PART_TEXT_CHARS),
    }
    if all(value is getattr(part, key) for key, value in update.items()):
        return part
    return part.model_copy(update=update)


def bound_messages(messages: list[Message]) -> list[Message]:
    """At most ``MAX_ROLLOUT_MESSAGES`` messages (the first and the last ones, a marker message
    between), each with at most ``MAX_MESSAGE_PARTS`` parts, each part cut by field."""
    if len(messages) > MAX_ROLLOUT_MESSAGES:
        head = MAX_ROLLOUT_MESSAGES // 2
        tail = MAX_ROLLOUT_MESSAGES - head - 1
        note = Message(role="system", parts=[TextPart(text=marker(len(messages) - head - tail, "messages"))])
        messages = [*messages[:head], note, *messages[len(messages) - tail :]]
    bounded = []
    for message in messages:
        parts = [bound_part(p) for p in message.parts[:MAX_MESSAGE_PARTS]]
        if len(message.parts) > MAX_MESSAGE_PARTS:
            parts.append(TextPart(text=marker(len(message.parts) - MAX_MESSAGE_PARTS, "parts")))
        elif all(a is b for a, b in zip(parts, message.parts, strict=True)):
            bounded.append(message)
            continue
        bounded.append(message.model_copy(update={"parts": parts}))
    return bounded


def bound_rollout(rollout: Rollout) -> Rollout:
    """``rollout`` with what can flow into a trajectory cut by field: messages, parts, tool names,
    texts, the case's input and names (a marker says what was cut)."""
    case = rollout.case.model_copy(
        update={
            "name": cut_text(rollout.case.name, MAX_FIELD_CHARS),
            "task_signature": cut_text(rollout.case.task_signature, MAX_FIELD_CHARS),
            "input": cut_value(rollout.case.input, MAX_QUERY_CHARS),
        }
    )
    return rollout.model_copy(update={"case": case, "messages": bound_messages(rollout.messages)})
