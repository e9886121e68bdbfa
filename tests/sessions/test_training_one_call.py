"""OpenViking's trainer with a rollout of one tool call (its own issue: "1 record(s), 0 plan(s)"):
CaseSpec v1, "Hi, I'm Dana and I prefer email updates. Please cancel order 7.", one completed
``cancel_order``, the assistant's answer, an OutcomeEvaluation — against ``ovtui serve`` of a
fresh sample workspace with its default ``[review] policy = "ask"``. The commit parks an
experience plan for review: a passed rollout's Approach names the call that answered the request;
a failed one's Reflect says what failed and what the agent did next."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from casespec_support import TRAINING_POLICY, casespec, commit_training, control, evaluation
from session_support import ovtui_serve
from workspace_support import build_sample_workspace

from ovtui.plugins.wording.sections import parse_sections
from ovtui.wiring.workspace import Workspace

DANA = "Hi, I'm Dana and I prefer email updates. Please cancel order 7."


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, Path]]:
    root = build_sample_workspace(tmp_path_factory.mktemp("one_call") / "ws")
    assert 'policy = "ask"' in (root / "ovtui.toml").read_text()
    with ovtui_serve(root) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client, root


def one_call_session(name: str, passed: bool) -> list[dict[str, Any]]:
    spec = casespec(name=name, task_signature=f"shop:{name}", input={"user_query": DANA})
    call = {
        "type": "tool",
        "tool_id": "c1",
        "tool_name": "cancel_order",
        "tool_input": {"order_id": "7"},
        "tool_output": '{"status": "cancelled"}' if passed else "Error: order 7 cannot be cancelled",
        "tool_status": "completed",
    }
    answer = "Order 7 is cancelled; you will get an email." if passed else "I could not cancel order 7."
    return [
        {
            "role": "system",
            "parts": [{"type": "text", "text": control("# OpenViking Batch Training CaseSpec v1", spec)}],
        },
        {"role": "user", "parts": [{"type": "text", "text": DANA}]},
        {"role": "assistant", "parts": [call]},
        {"role": "assistant", "parts": [{"type": "text", "text": answer}]},
        {
            "role": "user",
            "parts": [
                {
                    "type": "text",
                    "text": control(
                        "# OpenViking OutcomeEvaluation", evaluation(passed, 1.0 if passed else 0.0)
                    ),
                }
            ],
        },
    ]


@pytest.mark.parametrize("passed", [True, False], ids=["passed", "failed"])
def test_one_tool_call_parks_an_experience_plan(served: tuple[httpx.Client, Path], passed: bool) -> None:
    client, root = served
    name = f"cancel_order_{'ok' if passed else 'bad'}"
    task = commit_training(client, f"one_{name}", one_call_session(name, passed), TRAINING_POLICY)
    assert task["status"] == "completed", task
    diff = json.loads(
        (root / task["result"]["memory_diff_uri"].removeprefix("viking://user/default/")).read_text()
    )
    kinds = {k: sorted(o["memory_type"] for o in diff["operations"][k]) for k in ("adds", "updates")}
    assert kinds == {"adds": ["cases", "trajectories"], "updates": []}, kinds  # as OpenViking lists them
    plans = task["result"]["pending_plans"]
    assert len(plans) == 1, task["result"]
    pending = Workspace(root).review.pending_plan(plans[0])
    items = [i for i in pending.plan.items if i.memory_type == "experiences"]
    assert items and items[0].after_content, pending.plan
    sections = parse_sections(items[0].after_content)
    if passed:  # the call that answered the request, in Approach
        assert any("cancel_order(order_id) answered it" in line for line in sections.approach), sections
    else:  # what failed, and what the agent did next, in Reflect
        assert any(line.startswith("- When cancel_order failed") for line in sections.reflect), sections
    assert "Dana" not in items[0].after_content
