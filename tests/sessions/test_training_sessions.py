"""A client speaking OpenViking's batch-training CaseSpec v1 (the requests OpenViking 0.5.2's own
trainer sends, written out here by hand) against ``ovtui serve`` in its own process: the commit
trains from the supplied case, rubric and evaluation — a case file, a trajectory graded by the
supplied evaluation, an experience — and mines no user memory from the conversation; a CaseSpec
the server cannot train from fails the task with the reason and writes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from casespec_support import TRAINING_POLICY, casespec, commit_training, control, evaluation
from session_support import approving_sample_workspace, ovtui_serve

from ovtui.core.fileformat import parse_memory
from ovtui.memory.memory_diff import MemoryDiff

USER_TYPES = ("profile", "preferences", "entities", "events")


# The conversation states facts a user-memory extraction would keep (a name, a preference).
ROLLOUT: list[dict[str, Any]] = [
    {
        "role": "user",
        "parts": [
            {
                "type": "text",
                "text": "Hi, my name is Ana Ruiz. I prefer window seats. Please cancel order 1234.",
            }
        ],
        "created_at": "2026-11-30T10:00:00Z",
    },
    {
        "role": "assistant",
        "parts": [
            {
                "type": "tool",
                "tool_id": "c1",
                "tool_name": "get_order",
                "tool_uri": "viking://agent/tools/get_order",
                "skill_uri": "",
                "tool_input": {"order_id": "1234"},
                "tool_output": '{"status": "pending"}',
                "tool_status": "completed",
                "duration_ms": 12,
            }
        ],
        "created_at": "2026-11-30T10:00:05Z",
    },
    {
        "role": "assistant",
        "parts": [
            {
                "type": "tool",
                "tool_id": "c2",
                "tool_name": "cancel_order",
                "tool_input": {"order_id": "1234"},
                "tool_output": "cancelled",
                "tool_status": "completed",
            }
        ],
        "created_at": "2026-11-30T10:00:09Z",
    },
    {
        "role": "assistant",
        "parts": [{"type": "text", "text": "Order 1234 is cancelled."}],
        "created_at": "2026-11-30T10:00:10Z",
    },
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    root = approving_sample_workspace(tmp_path_factory.mktemp("training") / "ws")
    with ovtui_serve(root) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client, root


def memory_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / "memories").rglob("*.md")} | {
        str(p.relative_to(root)) for p in (root / "peers").rglob("*.md")
    }


def session_of(spec: dict[str, Any], passed: bool, score: float) -> list[dict[str, Any]]:
    return [
        {
            "role": "system",
            "parts": [{"type": "text", "text": control("# OpenViking Batch Training CaseSpec v1", spec)}],
        },
        *ROLLOUT,
        {
            "role": "user",
            "parts": [
                {"type": "text", "text": control("# OpenViking OutcomeEvaluation", evaluation(passed, score))}
            ],
        },
    ]


def test_trains_from_the_supplied_case_rubric_and_evaluation(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    before = memory_files(root)
    task = commit_training(
        client, "ov_train_1", session_of(casespec(), passed=True, score=1.0), TRAINING_POLICY
    )
    assert task["status"] == "completed", task
    new = memory_files(root) - before
    assert {n.split("/")[1] for n in new} == {"cases", "trajectories", "experiences"}, new
    assert not [n for n in memory_files(root) if n.split("/")[1] in USER_TYPES or n.startswith("peers/")]

    case = parse_memory((root / "memories/cases/airline_cancel_t7.md").read_text())
    assert case.fields["task_signature"] == "tau2:airline:train:7"
    assert json.loads(case.fields["input"])["user_query"] == "Cancel 1234."
    assert json.loads(case.fields["rubric"])["criteria"][0]["description"] == "The tau2 reward is 1.0."
    assert case.fields["evidence"] == "tau2 airline task 7, trial 1"
    (trajectory,) = [n for n in new if n.startswith("memories/trajectories/")]
    fields = parse_memory((root / trajectory).read_text()).fields
    assert fields["outcome"] == "success" and fields["reward"] == 1.0
    assert fields["case_uris"] == ["viking://user/default/memories/cases/airline_cancel_t7.md"]
    assert fields["source_archive_uri"] == task["result"]["archive_uri"]

    diff = MemoryDiff.model_validate_json(
        (root / "sessions/ov_train_1/history/archive_001/memory_diff.json").read_text()
    )
    written = {o.memory_type for o in diff.operations.adds} | {o.memory_type for o in diff.operations.updates}
    assert written == {"cases", "trajectories", "experiences"}, written


def test_the_supplied_evaluation_grades_the_rollout(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    spec = casespec(name="airline_cancel_t8", task_signature="tau2:airline:train:8")
    before = memory_files(root)
    task = commit_training(client, "ov_train_2", session_of(spec, passed=False, score=0.25), TRAINING_POLICY)
    assert task["status"] == "completed", task
    (trajectory,) = [n for n in memory_files(root) - before if n.startswith("memories/trajectories/")]
    memory = parse_memory((root / trajectory).read_text())
    # A score of 0.25, failed: what the supplied evaluation says (no evaluator of the server's
    # knows this case), in the trajectory's fields and its outcome line.
    assert memory.fields["reward"] == 0.25 and memory.fields["outcome"] == "failure"
    assert "score 0.25" in memory.content


def test_trajectories_only_when_experiences_are_not_allowed(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    spec = casespec(name="airline_cancel_t9", task_signature="tau2:airline:train:9")
    before = memory_files(root)
    policy = {"memory_types": ["cases", "trajectories"]}
    task = commit_training(client, "ov_train_3", session_of(spec, passed=True, score=1.0), policy)
    assert task["status"] == "completed", task
    assert {n.split("/")[1] for n in memory_files(root) - before} == {"cases", "trajectories"}


def bad(**case: Any) -> dict[str, Any]:
    return casespec(**case)


MALFORMED = {
    "not JSON": ("# OpenViking Batch Training CaseSpec v1\n\n```json\n{not json\n```", "not valid JSON"),
    "protocol": (
        control("# OpenViking Batch Training CaseSpec v1", {**casespec(), "protocol": "v0"}),
        "protocol",
    ),
    "no case name": (
        control("# OpenViking Batch Training CaseSpec v1", bad(name="")),
        "case.name is required",
    ),
    "input": (control("# OpenViking Batch Training CaseSpec v1", bad(input=["x"])), "case.input"),
    "criteria": (
        control("# OpenViking Batch Training CaseSpec v1", bad(rubric={"name": "r", "criteria": []})),
        "criteria: must be a non-empty list",
    ),
    "description": (
        control("# OpenViking Batch Training CaseSpec v1", bad(rubric={"criteria": [{"name": "c"}]})),
        "criteria[0].description is required",
    ),
    "unsafe name": (control("# OpenViking Batch Training CaseSpec v1", bad(name="../x")), "case.name"),
    "ovtui's older header": (
        '[OpenViking Training CaseSpec]\n{"name": "x"}',
        "# OpenViking Batch Training CaseSpec v1",
    ),
}


@pytest.mark.parametrize("problem", sorted(MALFORMED))
def test_a_casespec_it_cannot_read_fails_the_task_and_writes_nothing(
    served: tuple[httpx.Client, Path], problem: str
) -> None:
    client, root = served
    text, reason = MALFORMED[problem]
    session_id = "bad_" + problem.replace(" ", "_").replace("'", "")
    before = memory_files(root)
    messages = [{"role": "system", "parts": [{"type": "text", "text": text}]}, *ROLLOUT]
    task = commit_training(client, session_id, messages, TRAINING_POLICY)
    assert task["status"] == "failed" and reason in task["error"], task
    assert memory_files(root) == before  # never mined as a conversation either
    assert not (root / f"sessions/{session_id}/history/archive_001/memory_diff.json").exists()


def test_a_bad_outcome_evaluation_fails_the_task(served: tuple[httpx.Client, Path]) -> None:
    client, root = served
    messages = session_of(casespec(name="airline_cancel_t10"), passed=True, score=1.0)
    broken = evaluation(True, 1.0)
    del broken["evaluation"]["score"]
    messages[-1] = {"role": "user", "content": control("# OpenViking OutcomeEvaluation", broken)}
    before = memory_files(root)
    task = commit_training(client, "bad_outcome", messages, TRAINING_POLICY)
    assert task["status"] == "failed" and "OutcomeEvaluation" in task["error"] and "score" in task["error"], (
        task
    )
    assert memory_files(root) == before


def test_a_casespec_without_the_training_policy_fails_instead_of_being_mined(
    served: tuple[httpx.Client, Path],
) -> None:
    client, root = served
    before = memory_files(root)
    messages = session_of(casespec(name="airline_cancel_t11"), passed=True, score=1.0)
    task = commit_training(client, "no_policy", messages, None)
    assert task["status"] == "failed" and "memory_policy" in task["error"], task
    assert memory_files(root) == before
