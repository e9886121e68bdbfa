"""The CaseSpec v1 messages a rollout becomes, read back as the session API reads them."""

from __future__ import annotations

import json

from ovtui.core.domain import (
    Case,
    CriterionResult,
    Message,
    Rollout,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    TextPart,
)
from ovtui.protocols.training_session import (
    CASESPEC_HEADER,
    DEFAULT_EVIDENCE,
    OUTCOME_HEADER,
    SEE_REPORT,
    rollout_as_messages,
    rollout_from_messages,
)

REPORT = {"reward": 0.0, "actions": ["cancel_reservation"]}


def trial_rollout(evaluation: RubricEvaluation | None) -> Rollout:
    case = Case(
        name="airline_7_trial_2",
        task_signature="tau2:airline:7:trial:2",
        input={"task_id": "7", "user_query": "Cancel it.", "ground_truth": ["cancel_reservation"]},
        rubric=Rubric(name="airline_7", criteria=[RubricCriterion(name="tau2_reward")]),
        metadata={"original_case_name": "airline_7"},
    )
    said = Message(role="user", parts=[TextPart(text="Cancel my flight.")])
    return Rollout(case=case, messages=[said], evaluation=evaluation)


def payload(message: Message) -> dict[str, object]:
    text = message.text
    assert text.count("```json\n") == 1
    loaded = json.loads(text.split("```json\n", 1)[1].rsplit("\n```", 1)[0])
    assert isinstance(loaded, dict)
    return loaded


def test_a_rollout_becomes_casespec_v1_and_reads_back() -> None:
    evaluation = RubricEvaluation(
        passed=False,
        score=0.0,
        feedback=[json.dumps(REPORT), "the reservation was not cancelled"],
        criterion_results=[
            CriterionResult(
                criterion_name="tau2_reward", passed=False, score=0.0, evidence=[json.dumps(REPORT)]
            )
        ],
        metadata={"evaluation_result": REPORT},
    )
    messages = rollout_as_messages(trial_rollout(evaluation))
    spec, outcome = messages[0], messages[-1]
    assert spec.role == "system" and spec.text.startswith(CASESPEC_HEADER + "\n\n")
    assert outcome.role == "user" and outcome.text.startswith(OUTCOME_HEADER + "\n\n")
    case = payload(spec)["case"]
    assert isinstance(case, dict)
    # Repeated trials of one task name one case; the evaluator's answers never leave the runner.
    assert case["name"] == "airline_7" and case["task_signature"] == "tau2:airline:7"
    assert case["input"] == {"task_id": "7", "user_query": "Cancel it."}
    assert case["metadata"]["rollout_case_name"] == "airline_7_trial_2"
    assert case["rubric"]["criteria"] == [
        {"name": "tau2_reward", "description": "tau2_reward", "required": True, "weight": 1.0}
    ]

    back = rollout_from_messages(messages, "snap")
    assert back.case.name == "airline_7" and back.case.metadata["evidence"] == DEFAULT_EVIDENCE
    assert back.messages == messages[1:-1] and back.policy_snapshot_id == "snap"
    assert back.evaluation is not None
    # A full copy of the report is kept once, in the metadata; evidence says where it went.
    assert back.evaluation.feedback == ["the reservation was not cancelled"]
    assert back.evaluation.criterion_results[0].evidence == [SEE_REPORT]
    assert back.evaluation.metadata == {"evaluation_result": REPORT}


def test_no_evaluation_is_sent_as_null_and_read_as_none() -> None:
    messages = rollout_as_messages(trial_rollout(None))
    assert payload(messages[-1]) == {"evaluation": None}
    assert rollout_from_messages(messages, "snap").evaluation is None
