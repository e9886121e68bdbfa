"""OpenViking 0.5.2's batch-training CaseSpec v1 as its trainer sends it, written out by hand:
the training policy, the CaseSpec and OutcomeEvaluation control messages, and the commit its
trainer makes (create, add, commit without ``wait``, poll the task)."""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
from session_support import ok

TRAINING_POLICY = {
    "memory_types": ["cases", "trajectories", "experiences"],
    "working_memory": {"enabled": False},
}


def casespec(**case: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "airline_cancel_t7",
        "task_signature": "tau2:airline:train:7",
        "input": {
            "domain": "airline",
            "split": "train",
            "task_id": "7",
            "task_no": 7,
            "user_query": "Cancel 1234.",
        },
        "metadata": {
            "evidence": "tau2 airline task 7, trial 1",
            "rollout_case_name": "airline_cancel_t7_trial_1",
        },
        "rubric": {
            "name": "airline_cancel_t7_rubric",
            "description": "The order ends cancelled.",
            "criteria": [
                {
                    "name": "tau2_reward",
                    "description": "The tau2 reward is 1.0.",
                    "required": True,
                    "weight": 1.0,
                }
            ],
        },
    }
    spec.update(case)
    return {"protocol": "openviking.batch_train.case_spec.v1", "case": spec}


def control(header: str, payload: Any) -> str:
    body = json.dumps(payload, indent=2)
    return f"{header}\n\nStructured control data for the training pipeline.\n\n```json\n{body}\n```"


def evaluation(passed: bool, score: float) -> dict[str, Any]:
    report = {"reward": score, "db_check": passed}
    return {
        "evaluation": {
            "passed": passed,
            "score": score,
            "feedback": ["the order was cancelled late"],
            "criterion_results": [
                {
                    "criterion_name": "tau2_reward",
                    "passed": passed,
                    "score": score,
                    "feedback": [],
                    "evidence": ["See evaluation.metadata.evaluation_result."],
                    "metadata": {},
                }
            ],
            "metadata": {"evaluation_result": report},
        }
    }


def commit_training(
    client: httpx.Client, session_id: str, messages: list[dict[str, Any]], policy: dict[str, Any] | None
) -> dict[str, Any]:
    """Create, add, commit as OpenViking's trainer does (commit body, no ``wait``), then wait."""
    ok(
        client.post(
            "/api/v1/sessions",
            json={"session_id": session_id, **({"memory_policy": policy} if policy else {})},
        )
    )
    ok(client.post(f"/api/v1/sessions/{session_id}/messages/batch", json={"messages": messages}))
    accepted = ok(
        client.post(f"/api/v1/sessions/{session_id}/commit", json={"keep_recent_count": 0, "telemetry": True})
    )
    for _ in range(30):  # ovtui holds each poll until the task finishes (≤ 10 s)
        task: dict[str, Any] = ok(client.get(f"/api/v1/tasks/{accepted['task_id']}", params={"wait": 10}))
        if task["status"] in ("completed", "failed"):
            return task
    raise AssertionError(f"task never finished: {task}")
