"""A rollout sent as a session, so a session server trains on it: a CaseSpec message first (the
case, its rubric and task context, never the evaluation), the rollout's messages with tool
results as tool parts, an OutcomeEvaluation message last (the training signal).

``SessionCommitPolicyTrainer`` writes this shape; a commit whose first message is a CaseSpec takes
the training fast path (no user-memory extraction: the conversation is a benchmark episode).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from ovtui.core.domain import Case, Message, Rollout, RubricEvaluation, TextPart
from ovtui.core.errors import OvtuiError, first_problem

CASESPEC_HEADER = "[OpenViking Training CaseSpec]"
OUTCOME_HEADER = "[OpenViking OutcomeEvaluation]"
# Case input keys a CaseSpec keeps: the task, never the policy or run bookkeeping.
DROPPED_INPUT_KEYS = frozenset({"policy", "data_root", "rollout_metadata", "policy_snapshot_id"})


def casespec_text(case: Case) -> str:
    spec: dict[str, Any] = case.model_dump(mode="json")
    spec["input"] = {k: v for k, v in case.input.items() if k not in DROPPED_INPUT_KEYS}
    return f"{CASESPEC_HEADER}\n{json.dumps(spec, ensure_ascii=False)}"


def outcome_text(evaluation: RubricEvaluation) -> str:
    return f"{OUTCOME_HEADER}\n{evaluation.model_dump_json()}"


def rollout_as_messages(rollout: Rollout) -> list[Message]:
    messages = [Message(role="user", parts=[TextPart(text=casespec_text(rollout.case))])]
    messages += rollout.messages
    if rollout.evaluation is not None:
        messages.append(Message(role="user", parts=[TextPart(text=outcome_text(rollout.evaluation))]))
    return messages


def _body(text: str, header: str) -> str | None:
    stripped = text.lstrip()
    return stripped[len(header) :] if stripped.startswith(header) else None


def is_training_session(messages: list[Message]) -> bool:
    return bool(messages) and _body(messages[0].text, CASESPEC_HEADER) is not None


def rollout_from_messages(messages: list[Message], snapshot_id: str) -> Rollout:
    """The rollout a training session carries; an unreadable CaseSpec or outcome is an error."""
    spec = _body(messages[0].text, CASESPEC_HEADER)
    if spec is None:
        raise OvtuiError("not a training session: the first message is not a CaseSpec")
    try:
        case = Case.model_validate_json(spec)
    except ValidationError as exc:
        raise OvtuiError(f"CaseSpec message: {first_problem(exc, 'message')}") from None
    body = messages[1:]
    evaluation = None
    if body and (outcome := _body(body[-1].text, OUTCOME_HEADER)) is not None:
        try:
            evaluation = RubricEvaluation.model_validate_json(outcome)
        except ValidationError as exc:
            raise OvtuiError(f"OutcomeEvaluation message: {first_problem(exc, 'message')}") from None
        body = body[:-1]
    return Rollout(case=case, messages=body, policy_snapshot_id=snapshot_id, evaluation=evaluation)
