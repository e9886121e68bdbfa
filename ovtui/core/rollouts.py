"""What every stage reads from a rollout the same way, and the rollout of a case that never ran.

The user's query of a case, what the user asked in a rollout, and an evaluation as text are read
by the executors, the analyzer and the backends' prompts alike: one reading, here, so a prompt and
a trajectory file never disagree about what the task was.
"""

from __future__ import annotations

import json
from datetime import datetime

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import EXECUTION_ERROR, Case, Rollout, RubricEvaluation

# Keys of a rollout's metadata the trajectory's file is named by: when its first message was written
# (ISO 8601, as a session message's ``created_at``) and the session archive it came from.
FIRST_MESSAGE_AT = "first_message_at"
SOURCE_ARCHIVE_URI = "source_archive_uri"

# Where a case's input carries the user's request, in order of preference.
QUERY_KEYS = ("user_query", "query", "question", "prompt", "message")


def user_query(case: Case) -> str:
    """The case's request: its first non-blank query field, else its whole input, else its task."""
    for key in QUERY_KEYS:
        value = case.input.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return json.dumps(case.input, ensure_ascii=False) if case.input else case.task_signature


def task_query(rollout: Rollout) -> str:
    """What the user asked: the first user message, else the case's query."""
    first = next((m.text for m in rollout.messages if m.role == "user" and m.text.strip()), None)
    return first if first is not None else user_query(rollout.case)


def feedback_text(evaluation: RubricEvaluation) -> str:
    """The evaluation as the lines a backend reads: the verdict, the feedback, each criterion."""
    lines = [f"Evaluation: {'PASSED' if evaluation.passed else 'FAILED'} (score {evaluation.score:.2f})"]
    lines += [f"- {line}" for line in evaluation.feedback]
    for result in evaluation.criterion_results:
        mark = "ok" if result.passed else "FAILED"
        lines.append(f"- [{mark}] {result.criterion_name}: {'; '.join(result.feedback)}".rstrip(": "))
    return "\n".join(lines)


MAX_OUTCOME_LINE = 240  # characters of a rollout's outcome line kept in reports


def outcome_line(rollout: Rollout) -> str:
    """What the agent did and how it was graded, in one line: ``passed: get_reservation →
    refund_payment`` or ``failed: no tool calls (why)`` — the evidence a report shows for a case."""
    tools = " → ".join(p.tool_name for m in rollout.messages for p in m.tool_parts) or "no tool calls"
    evaluation = rollout.evaluation
    verdict = "passed" if evaluation and evaluation.passed else "failed"
    why = f" ({'; '.join(evaluation.feedback[:2])})" if evaluation and evaluation.feedback else ""
    line = f"{verdict}: {tools}{why}"
    return line if len(line) <= MAX_OUTCOME_LINE else line[: MAX_OUTCOME_LINE - 1] + "…"


def failed_rollout(case: Case, context: ExecutionContext, error: str, source: str) -> Rollout:
    """A case whose execution failed: graded failed, with the error text (``source``: who ran it,
    e.g. the service's URL). It counts as a failed case and is never trained on."""
    return Rollout(
        case=case,
        policy_snapshot_id=context.policy_snapshot_id,
        evaluation=RubricEvaluation(
            passed=False,
            score=0.0,
            feedback=[f"rollout execution failed: {error}"],
            metadata={EXECUTION_ERROR: error},
        ),
        metadata={EXECUTION_ERROR: error, "service": source},
    )


def iso_time(value: object) -> datetime | None:
    """An ISO 8601 time (``2026-11-30T10:00:00Z``) as written — its wall-clock time, not moved to
    another zone, as OpenViking reads a message's ``created_at``; None when it is no such time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
