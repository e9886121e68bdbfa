"""Compact text renderings of rollouts, evaluations and trajectories for prompts.

Prompt tokens are the main cost of the LLM path, so tool calls are one line each and long tool
outputs and system prompts are clipped; what the evaluator said is always kept in full.

A structured tool output (a JSON object, a list of them) is cut by key, not by position: every
top-level scalar is kept (the ``status``, ``membership``, ``insurance``, ``created_at`` a policy
rule turns on), nested collections are summarised, and only then is the text clipped. Cutting the
first N characters kept addresses and dates of birth and dropped exactly those fields.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ovtui.plugins import (
    EXPERIENCES,
    Message,
    RejectionSource,
    Rollout,
    RubricEvaluation,
    TextPart,
    ToolPart,
    Trajectory,
    feedback_text,
    parse_json,
)

MAX_TOOL_INPUT = 300
MAX_TOOL_OUTPUT = 400
MAX_STRUCTURED_OUTPUT = 700
MAX_SCALAR = 60
MAX_LIST_ITEMS = 3
MAX_SYSTEM = 300
MAX_TEXT = 2000


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more chars]"


def _scalar(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return clip(text, MAX_SCALAR) if isinstance(value, str) else text


def _summary(value: Any, depth: int) -> str:
    """Scalars in full (long strings clipped), collections shrunk the deeper they sit."""
    if isinstance(value, dict):
        if depth >= 3:
            return f"{{{len(value)} keys}}"
        scalars = [(k, v) for k, v in value.items() if not isinstance(v, dict | list)]
        nested = [(k, v) for k, v in value.items() if isinstance(v, dict | list)]
        parts = [f"{k}={_scalar(v)}" for k, v in scalars]  # scalars first: a clip cuts collections
        if depth >= 2:
            parts += [f"{k}={_size(v)}" for k, v in nested]
        else:
            parts += [f"{k}={_summary(v, depth + 1)}" for k, v in nested]
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, list):
        if depth >= 3 or not value:
            return _size(value)
        shown = [_summary(v, depth + 1) for v in value[:MAX_LIST_ITEMS]]
        more = f", … {len(value) - MAX_LIST_ITEMS} more" if len(value) > MAX_LIST_ITEMS else ""
        return "[" + ", ".join(shown) + more + "]"
    return _scalar(value)


def _size(value: dict[str, Any] | list[Any]) -> str:
    return f"{{{len(value)} keys}}" if isinstance(value, dict) else f"[{len(value)} items]"


# Structured tool outputs already shown in one rendering, by the tool that returned them.
Earlier = list[tuple[str, dict[str, Any]]]


def _json_of(text: str) -> Any:
    if text[:1] not in "{[":
        return None
    try:
        return parse_json(text, source="a tool output")
    except ValueError:
        return None


def _repeat_of(data: dict[str, Any], earlier: Earlier) -> str | None:
    """A record shown again (a cancel or update returns the whole record the agent looked up): only
    what changed, against the latest earlier output with the same keys and mostly the same values."""
    for tool_name, before in reversed(earlier):
        if before.keys() != data.keys():
            continue
        changed = {k: v for k, v in data.items() if before[k] != v}
        if len(changed) * 2 <= len(data):
            what = _summary(changed, 1)[1:-1] if changed else "nothing changed"
            return f"{{the {tool_name} output above, except: {what}}}"
    return None


def render_tool_output(output: str, tool_name: str = "", earlier: Earlier | None = None) -> str:
    """A tool output for a prompt: JSON cut by key (see the module note), a record already shown as
    what changed in it, other text by length. ``earlier`` collects the records shown."""
    text = output.strip()
    data = _json_of(text)
    if isinstance(data, dict) and earlier is not None:
        repeat = _repeat_of(data, earlier)
        earlier.append((tool_name, data))
        if repeat is not None:
            return clip(repeat, MAX_STRUCTURED_OUTPUT)
    if isinstance(data, dict | list):
        return clip(_summary(data, 0), MAX_STRUCTURED_OUTPUT)
    return clip(text.replace("\n", " "), MAX_TOOL_OUTPUT)


def render_tool(part: ToolPart, earlier: Earlier | None = None) -> str:
    args = clip(json.dumps(part.tool_input, ensure_ascii=False, separators=(",", ":")), MAX_TOOL_INPUT)
    output = render_tool_output(part.tool_output, part.tool_name, earlier)
    return f"  → tool {part.tool_name}({args}) [{part.tool_status}]: {output}"


def render_message(message: Message, earlier: Earlier | None = None) -> str:
    limit = MAX_SYSTEM if message.role == "system" else MAX_TEXT
    lines: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text.strip():
            lines.append(f"[{message.role}] {clip(part.text, limit)}")
        elif isinstance(part, ToolPart):
            lines.append(render_tool(part, earlier))
    return "\n".join(lines)


def render_rollout(rollout: Rollout) -> str:
    case = rollout.case
    head = f"## Rollout of case `{case.name}` (task: {case.task_signature})"
    criteria = "\n".join(
        f"- {c.name}{' (required)' if c.required else ''}: {c.description}" for c in case.rubric.criteria
    )
    earlier: Earlier = []
    body = "\n".join(text for text in (render_message(m, earlier) for m in rollout.messages) if text)
    rubric = f"\n### Rubric\n{criteria}" if criteria else ""
    return f"{head}{rubric}\n### Conversation\n{body or '(no messages)'}"


def render_evaluation(evaluation: RubricEvaluation, feedback: str = "") -> str:
    lines = [
        "## Evaluation",
        f"passed: {'yes' if evaluation.passed else 'no'}; score: {evaluation.score:.2f}",
    ]
    for result in evaluation.criterion_results:
        verdict = "passed" if result.passed else "FAILED"
        notes = "; ".join([*result.feedback, *result.evidence])
        lines.append(
            f"- {result.criterion_name}: {verdict} (score {result.score:.2f}){' — ' + notes if notes else ''}"
        )
    lines.extend(f"- {line}" for line in evaluation.feedback)
    # The analyzer's feedback is usually its own rendering of this same evaluation: sent once.
    if feedback.strip() and feedback.strip() != feedback_text(evaluation).strip():
        lines += ["## Evaluator feedback", feedback.strip()]
    return "\n".join(lines)


def render_trajectory(trajectory: Trajectory) -> str:
    outcome = getattr(trajectory.outcome, "value", trajectory.outcome)
    anchor = f"\nretrieval anchor: {trajectory.retrieval_anchor}" if trajectory.retrieval_anchor else ""
    return f"## Trajectory `{trajectory.name}` — outcome: {outcome}{anchor}\n{trajectory.content.strip()}"


MAX_REJECTIONS_PER_TARGET = 3
MAX_REJECTED_LINES = 8


def render_rejections(feedback: RejectionSource | None, targets: Iterable[str]) -> str:
    """The recent rejections of changes to ``targets`` with the reviewers' reasons, as a prompt
    section ("" when there are none): the model is told what a person already turned down."""
    if feedback is None:
        return ""
    parts = []
    for name in dict.fromkeys(targets):
        for rejection in feedback.rejections(EXPERIENCES, name)[:MAX_REJECTIONS_PER_TARGET]:
            what = "edited out of a proposal" if rejection.edited else f"rejected ({rejection.kind})"
            reason = clip(rejection.note, MAX_SCALAR * 4) or "no reason given"
            lines = "\n".join(
                f"    {clip(line, MAX_TOOL_INPUT)}" for line in rejection.lines[:MAX_REJECTED_LINES]
            )
            parts.append(
                f"- {name}: {what} by {rejection.reviewer or 'a reviewer'}: {reason}\n{lines}".rstrip()
            )
    if not parts:
        return ""
    head = (
        "## Changes reviewers rejected\nDo not propose these again, in these or other words, unless "
        "this evidence answers the reviewer's reason:"
    )
    return head + "\n" + "\n".join(parts)
