"""A rollout sent as a training session: OpenViking's batch-training CaseSpec v1, both ways.

The session is created with ``TRAINING_POLICY`` (memory types cases, trajectories and experiences;
working memory off) and holds, in order:

1. a ``system`` message: ``CASESPEC_HEADER``, a sentence, and a fenced JSON block
   ``{"protocol": CASESPEC_PROTOCOL, "case": {name, task_signature, input, metadata, rubric}}`` —
   the case's input cut to the task's own keys (``CASESPEC_INPUT_KEYS``), so an evaluator's
   answers never reach memory;
2. the rollout's messages (tool results as tool parts);
3. a ``user`` message: ``OUTCOME_HEADER``, a sentence, and ``{"evaluation": {...} | null}`` — the
   training signal.

A server takes a commit as a training session when its effective memory types lie within cases,
trajectories and experiences and include cases and trajectories, and its first message's text
starts with the header. From the header on, a payload that cannot be read is an error naming what
is wrong (the commit's task fails with it): a benchmark episode is never mined as a conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from ovtui.core.bounded_json import JsonError, parse_json
from ovtui.core.domain import Case, Message, Rollout, Rubric, RubricCriterion, RubricEvaluation, TextPart
from ovtui.core.errors import OvtuiError, UnsafePathError, first_problem
from ovtui.core.names import validate_name

CASESPEC_HEADER = "# OpenViking Batch Training CaseSpec v1"
CASESPEC_PROTOCOL = "openviking.batch_train.case_spec.v1"
OUTCOME_HEADER = "# OpenViking OutcomeEvaluation"
# The header ovtui's trainer sent before it spoke CaseSpec v1 (a compact Case after it, no memory
# policy). A session starting with it is refused with the fix named rather than read a second way.
LEGACY_CASESPEC_HEADER = "[OpenViking Training CaseSpec]"

CASES, TRAJECTORIES, EXPERIENCES = "cases", "trajectories", "experiences"
TRAINING_TYPES = frozenset({CASES, TRAJECTORIES, EXPERIENCES})
TRAINING_POLICY: dict[str, Any] = {
    "memory_types": [CASES, TRAJECTORIES, EXPERIENCES],
    "working_memory": {"enabled": False},
}
# The case input a CaseSpec carries: the task, never its answers (a benchmark's ground truth, a
# simulated user's script, the evaluator's database).
CASESPEC_INPUT_KEYS = ("domain", "split", "data_split", "task_id", "task_no", "user_query")
# A case file's evidence when the CaseSpec gives none.
DEFAULT_EVIDENCE = "Given by the training pipeline as a batch-training CaseSpec."
EVALUATION_RESULT = "evaluation_result"  # evaluation metadata key holding the benchmark's full report
SEE_REPORT = "See evaluation.metadata.evaluation_result."

_CASESPEC_INTRO = (
    "The structured case and rubric below describe the task that produced this rollout: "
    "control-plane metadata of the batch training pipeline."
)
_OUTCOME_INTRO = (
    "The structured evaluation below is the outcome of the rollout above: "
    "the training signal for the memories extracted from it."
)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)


class TrainingSessionError(OvtuiError):
    """A training session whose CaseSpec or OutcomeEvaluation cannot be read."""


def _block(header: str, intro: str, payload: dict[str, Any]) -> str:
    body = json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=True)
    return f"{header}\n\n{intro}\n\n```json\n{body}\n```"


# --- the client: a rollout as the messages of a training session ---------------------------------


def _stable_name(rollout: Rollout) -> str:
    """Repeated trials of one task name one case (``original_case_name``), else the case's name."""
    case = rollout.case
    original = (
        case.input.get("original_case_name")
        or case.metadata.get("original_case_name")
        or rollout.metadata.get("original_case_name")
    )
    return str(original or case.name)


def _stable_signature(rollout: Rollout) -> str:
    case = rollout.case
    if case.input.get("original_case_name") or case.metadata.get("original_case_name"):
        return case.task_signature.split(":trial:", 1)[0]
    return case.task_signature


def _rubric_payload(rubric: Rubric) -> dict[str, Any]:
    # A criterion needs a description and a rubric a criterion to be read (OpenViking refuses
    # either missing); ovtui's criteria often have only a name, which then says it.
    criteria = [
        {"name": c.name, "description": c.description or c.name, "required": c.required, "weight": c.weight}
        for c in rubric.criteria
    ] or [
        {
            "name": rubric.name,
            "description": rubric.description or "The rollout passes its evaluation.",
            "required": True,
            "weight": 1.0,
        }
    ]
    return {"name": rubric.name, "description": rubric.description, "criteria": criteria}


def casespec_payload(rollout: Rollout) -> dict[str, Any]:
    case = rollout.case
    metadata = dict(case.metadata)
    metadata.setdefault("rollout_case_name", case.name)
    metadata.setdefault("rollout_task_signature", case.task_signature)
    return {
        "protocol": CASESPEC_PROTOCOL,
        "case": {
            "name": _stable_name(rollout),
            "task_signature": _stable_signature(rollout),
            "input": {k: case.input[k] for k in CASESPEC_INPUT_KEYS if k in case.input},
            "metadata": metadata,
            "rubric": _rubric_payload(case.rubric),
        },
    }


def _without_report(values: Iterable[str], report: Any) -> list[str]:
    """``values`` without full JSON copies of the benchmark's report (the metadata holds it once)."""
    if not isinstance(report, dict | list):
        return list(values)
    whole = json.dumps(report, sort_keys=True)
    kept = []
    for value in values:
        try:
            copy = json.dumps(parse_json(value, source="a value"), sort_keys=True) == whole
        except ValueError:
            copy = False
        if not copy:
            kept.append(value)
    return kept


def evaluation_payload(evaluation: RubricEvaluation | None) -> dict[str, Any] | None:
    if evaluation is None:
        return None
    report = evaluation.metadata.get(EVALUATION_RESULT)
    criteria = []
    for result in evaluation.criterion_results:
        evidence = _without_report(result.evidence, report)
        if len(evidence) < len(result.evidence):
            evidence.append(SEE_REPORT)
        criteria.append(
            {
                "criterion_name": result.criterion_name,
                "passed": result.passed,
                "score": result.score,
                "feedback": _without_report(result.feedback, report),
                "evidence": evidence,
                "metadata": result.metadata,
            }
        )
    return {
        "passed": evaluation.passed,
        "score": evaluation.score,
        "feedback": _without_report(evaluation.feedback, report),
        "criterion_results": criteria,
        "metadata": evaluation.metadata,
    }


def rollout_as_messages(rollout: Rollout) -> list[Message]:
    """The messages of ``rollout``'s training session: the CaseSpec, the rollout, its evaluation."""
    spec = _block(CASESPEC_HEADER, _CASESPEC_INTRO, casespec_payload(rollout))
    outcome = _block(OUTCOME_HEADER, _OUTCOME_INTRO, {"evaluation": evaluation_payload(rollout.evaluation)})
    return [
        Message(role="system", parts=[TextPart(text=spec)]),
        *rollout.messages,
        Message(role="user", parts=[TextPart(text=outcome)]),
    ]


# --- the server: recognising a training session and reading it back ------------------------------


def is_training_policy(effective_types: Iterable[str]) -> bool:
    """Whether a commit allowed these memory types may be a training session: only training types,
    and at least cases and trajectories (experiences are trained only when allowed too)."""
    types = set(effective_types)
    return types <= TRAINING_TYPES and {CASES, TRAJECTORIES} <= types


def casespec_header(messages: list[Message]) -> str | None:
    """The CaseSpec header the first message starts with (v1 or ovtui's older one), if any."""
    if not messages:
        return None
    text = messages[0].text.strip()
    return next((h for h in (CASESPEC_HEADER, LEGACY_CASESPEC_HEADER) if text.startswith(h)), None)


def _payload(text: str, header: str, what: str) -> dict[str, Any]:
    """The JSON object of a control message: its first fenced block, else everything after the header."""
    fenced = _FENCE.search(text)
    raw = fenced.group(1).strip() if fenced else text.strip().removeprefix(header).strip()
    if not raw:
        raise TrainingSessionError(f"{what}: no JSON after the header")
    try:
        payload = parse_json(raw, source=what)
    except JsonError as exc:
        raise TrainingSessionError(f"{what}: not valid JSON ({exc.reason})") from None
    if not isinstance(payload, dict):
        raise TrainingSessionError(f"{what}: the payload must be a JSON object")
    return payload


def _text(raw: dict[str, Any], key: str) -> str:
    value = raw.get(key)
    return str(value).strip() if value is not None else ""


def _weight(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return 1.0
    return float(value)


def _criterion(index: int, raw: Any) -> RubricCriterion:
    where = f"CaseSpec case.rubric.criteria[{index}]"
    if not isinstance(raw, dict):
        raise TrainingSessionError(f"{where}: must be an object")
    description = _text(raw, "description")
    if not description:
        raise TrainingSessionError(f"{where}.description is required")
    metadata = raw.get("metadata")
    return RubricCriterion(
        name=_text(raw, "name") or f"criterion_{index + 1}",
        description=description,
        required=bool(raw.get("required", True)),
        weight=_weight(raw.get("weight")),
        metadata=dict(metadata) if isinstance(metadata, dict) else {},
    )


def _rubric(raw: Any, case_name: str) -> Rubric:
    if not isinstance(raw, dict):
        raise TrainingSessionError("CaseSpec case.rubric: must be an object")
    criteria = raw.get("criteria")
    if not isinstance(criteria, list) or not criteria:
        raise TrainingSessionError("CaseSpec case.rubric.criteria: must be a non-empty list")
    return Rubric(
        name=_text(raw, "name") or f"{case_name}_rubric",
        description=_text(raw, "description"),
        criteria=[_criterion(i, c) for i, c in enumerate(criteria)],
    )


def case_from_casespec(text: str) -> Case:
    """The Case a CaseSpec v1 message carries; what is wrong with it is named."""
    payload = _payload(text, CASESPEC_HEADER, "CaseSpec")
    protocol = str(payload.get("protocol") or "")
    if protocol != CASESPEC_PROTOCOL:
        raise TrainingSessionError(f"CaseSpec protocol: expected {CASESPEC_PROTOCOL!r}, got {protocol!r}")
    raw = payload.get("case")
    if not isinstance(raw, dict):
        raise TrainingSessionError("CaseSpec case: must be an object")
    name, signature = _text(raw, "name"), _text(raw, "task_signature")
    if not name:
        raise TrainingSessionError("CaseSpec case.name is required")
    try:  # the case's file is named after it
        validate_name(name, what="CaseSpec case.name")
    except UnsafePathError as exc:
        raise TrainingSessionError(str(exc)) from None
    if not signature:
        raise TrainingSessionError("CaseSpec case.task_signature is required")
    case_input = raw.get("input")
    if not isinstance(case_input, dict):
        raise TrainingSessionError("CaseSpec case.input: must be an object")
    metadata = raw.get("metadata")
    metadata = dict(metadata) if isinstance(metadata, dict) else {}
    if not isinstance(metadata.get("evidence"), str) or not metadata["evidence"].strip():
        metadata["evidence"] = DEFAULT_EVIDENCE
    return Case(
        name=name,
        task_signature=signature,
        input=dict(case_input),
        rubric=_rubric(raw.get("rubric"), name),
        metadata={"source": "casespec_v1", **metadata},
    )


def evaluation_from_outcome(text: str) -> RubricEvaluation | None:
    """The evaluation an OutcomeEvaluation message carries (None: ``"evaluation": null``)."""
    payload = _payload(text, OUTCOME_HEADER, "OutcomeEvaluation")
    if "evaluation" not in payload:
        raise TrainingSessionError("OutcomeEvaluation: the payload has no 'evaluation' key")
    if payload["evaluation"] is None:
        return None
    try:
        return RubricEvaluation.model_validate(payload["evaluation"])
    except ValidationError as exc:
        raise TrainingSessionError(f"OutcomeEvaluation: {first_problem(exc, 'evaluation')}") from None


def rollout_from_messages(messages: list[Message], snapshot_id: str) -> Rollout:
    """The rollout a CaseSpec v1 training session carries: its case from the CaseSpec, its
    evaluation from a closing OutcomeEvaluation (which then grades the rollout), the messages
    between them. Anything unreadable is a TrainingSessionError naming the message and field."""
    header = casespec_header(messages)
    if header == LEGACY_CASESPEC_HEADER:
        raise TrainingSessionError(
            f"the session starts with {LEGACY_CASESPEC_HEADER!r}, the header of ovtui's trainer before "
            f"CaseSpec v1: send {CASESPEC_HEADER!r} with a fenced JSON CaseSpec (ovtui's session-commit "
            "trainer does) and create the session with memory_policy.memory_types "
            "cases, trajectories, experiences"
        )
    if header is None:
        raise TrainingSessionError(f"not a training session: the first message is not {CASESPEC_HEADER!r}")
    case = case_from_casespec(messages[0].text)
    body = messages[1:]
    evaluation = None
    if body and body[-1].text.strip().startswith(OUTCOME_HEADER):
        evaluation = evaluation_from_outcome(body[-1].text)
        body = body[:-1]
    return Rollout(case=case, messages=body, policy_snapshot_id=snapshot_id, evaluation=evaluation)
