"""Compact text renderings of rollouts, evaluations and trajectories for prompts.

Prompt tokens are the main cost of the LLM path, so tool calls are one line each and long tool
outputs and system prompts are clipped; what the evaluator said is always kept in full.
"""

from __future__ import annotations

import json

from ovtui.domain import Message, Rollout, RubricEvaluation, TextPart, ToolPart, Trajectory

MAX_TOOL_INPUT = 300
MAX_TOOL_OUTPUT = 400
MAX_SYSTEM = 300
MAX_TEXT = 2000


def clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}… [{len(text) - limit} more chars]"


def render_tool(part: ToolPart) -> str:
    args = clip(json.dumps(part.tool_input, ensure_ascii=False, separators=(",", ":")), MAX_TOOL_INPUT)
    output = clip(part.tool_output.replace("\n", " "), MAX_TOOL_OUTPUT)
    return f"  → tool {part.tool_name}({args}) [{part.tool_status}]: {output}"


def render_message(message: Message) -> str:
    limit = MAX_SYSTEM if message.role == "system" else MAX_TEXT
    lines: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text.strip():
            lines.append(f"[{message.role}] {clip(part.text, limit)}")
        elif isinstance(part, ToolPart):
            lines.append(render_tool(part))
    return "\n".join(lines)


def render_rollout(rollout: Rollout) -> str:
    case = rollout.case
    head = f"## Rollout of case `{case.name}` (task: {case.task_signature})"
    criteria = "\n".join(
        f"- {c.name}{' (required)' if c.required else ''}: {c.description}" for c in case.rubric.criteria
    )
    body = "\n".join(text for text in (render_message(m) for m in rollout.messages) if text)
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
    if feedback.strip():
        lines += ["## Evaluator feedback", feedback.strip()]
    return "\n".join(lines)


def render_trajectory(trajectory: Trajectory) -> str:
    outcome = getattr(trajectory.outcome, "value", trajectory.outcome)
    anchor = f"\nretrieval anchor: {trajectory.retrieval_anchor}" if trajectory.retrieval_anchor else ""
    return f"## Trajectory `{trajectory.name}` — outcome: {outcome}{anchor}\n{trajectory.content.strip()}"
