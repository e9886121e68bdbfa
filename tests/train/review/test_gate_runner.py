"""The gate runner: the gates run in the order listed, each one's finding lands in the plan, and
each report is said once, right after its gate (a later gate on the same topic speaks for both).
Then the real gates, as the builder lists them for a configured model, through the fake
OpenAI-compatible server: the run's log says exactly what the engine always said."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workspace_support import build_workspace, kernel_of

from ovtui.core.domain import (
    Case,
    Experience,
    ExperienceSet,
    PolicyPlanItem,
    PolicyStatus,
    PolicyUpdatePlan,
    Rollout,
    RolloutAnalysis,
    Rubric,
    RubricEvaluation,
    Trajectory,
)
from ovtui.core.events import Event, EventBus
from ovtui.testing.fakes import ScriptedGate
from ovtui.testing.helpers import KEY_ENV
from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.train.review.gates.base import GateReport
from ovtui.train.review.gates.contradictions import CONTRADICTIONS
from ovtui.train.review.gates.runner import GateRunner
from ovtui.train.review.gates.sanitizer import HAZARDS
from ovtui.wiring.workspace import Workspace

pytest_plugins = ["ovtui.testing.fixtures"]

ROOT = "viking://user/default/memories/experiences"
SITUATION = "## Situation\n- Customer asks to cancel a booking"


def said(events: list[Event]) -> list[tuple[str, Any]]:
    return [(e.kind, e.data["message"] if e.kind == "log" else e.data) for e in events]


async def test_the_gates_run_in_order_and_each_report_is_said_once_after_its_gate() -> None:
    plan = PolicyUpdatePlan(items=[PolicyPlanItem(kind="upsert", target_name="refunds", after_content="- x")])
    validated = {"line": "validation 1/2 → 2/2, flips +1 −0", "before": 1, "after": 2}
    gates = [
        ScriptedGate("evidence"),
        ScriptedGate("leaks", GateReport(warning="1 item(s) leak")),
        ScriptedGate("offline", GateReport(warning="1 item(s) contradict"), topic="contradictions"),
        ScriptedGate("model", GateReport(warning="2 item(s) contradict"), "contradictions", "a call failed"),
        ScriptedGate("validation", GateReport(event="plan_validated", data=validated)),
    ]
    seen: list[Event] = []

    await GateRunner(gates).assess(plan, ExperienceSet(root_uri=ROOT), [], EventBus([seen.append]))

    assert plan.metadata["gates"] == ["evidence", "leaks", "offline", "model", "validation"]
    assert all(plan.items[0].metadata[gate.name] is True for gate in gates)
    # The offline step's count is not said: the model's step, after it on the topic, counts both.
    assert said(seen) == [
        ("log", "1 item(s) leak"),
        ("log", "a call failed"),
        ("log", "2 item(s) contradict"),
        ("plan_validated", validated),
    ]
    assert [e.data["level"] for e in seen if e.kind == "log"] == ["warning", "info", "warning"]


def experience(name: str, content: str) -> Experience:
    return Experience(
        name=name, uri=f"{ROOT}/{name}.md", content=content, status=PolicyStatus.PRODUCTION, version=1
    )


def analysis() -> RolloutAnalysis:
    case = Case(
        name="c1",
        task_signature="cancel",
        input={"user_query": "cancel my booking", "email": "ana@example.com"},
        rubric=Rubric(name="cancel"),
    )
    trajectory = Trajectory(name="c1", uri="mem://trajectories/c1", content="what c1 did")
    evaluation = RubricEvaluation(passed=False, score=0.0)
    return RolloutAnalysis(rollout=Rollout(case=case), evaluation=evaluation, trajectories=[trajectory])


def upsert(name: str, reflect: str) -> PolicyPlanItem:
    return PolicyPlanItem(
        kind="upsert",
        target_name=name,
        after_content=f"{SITUATION}\n- They are in a hurry\n## Reflect\n{reflect}",
        evidence_trajectory_uris=["mem://trajectories/c1"],
    )


async def test_the_built_gates_say_what_the_engine_said(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    root = build_workspace(tmp_path / "ws")
    (root / "ovtui.toml").write_text(
        f'[llm]\nbackend = "openai"\nbase_url = "{fake.base_url}"\nmodel = "fake-model"\n'
        f'api_key_env = "{KEY_ENV}"\n',
        encoding="utf-8",
    )
    kernel = kernel_of(Workspace(root))
    runner = kernel.gates(None)
    assert [type(g).__name__ for g in runner.gates] == [
        "EvidenceGate",
        "ReadabilityGate",  # the sample agent reads experiences by rules
        "LeakGate",
        "ContradictionGate",
        "ModelContradictionCheck",  # a model does the thinking
        "SanitizerGate",
    ]
    policy_set = ExperienceSet(
        root_uri=ROOT,
        policies=[experience("cancellations", f"{SITUATION}\n## Reflect\n- NEVER offer compensation")],
    )
    # Offline, only "ALWAYS" contradicts "NEVER"; the model finds the voucher too (line 5 against 4).
    plan = PolicyUpdatePlan(
        items=[
            upsert("vouchers", "- Offer a travel voucher for the trouble"),
            upsert("compensation", "- ALWAYS offer compensation"),
            upsert("contact", "- Write to ana@example.com"),
        ]
    )
    finding = {"line": 5, "other": "cancellations", "other_line": 4, "why": "a voucher is compensation"}
    fake.respond_with(
        lambda asked: Reply.json({"contradictions": [finding] if "`vouchers`" in str(asked.messages) else []})
    )
    seen: list[Event] = []
    try:
        await runner.assess(plan, policy_set, [analysis()], EventBus([seen.append]))
    finally:
        await kernel.aclose()

    assert [CONTRADICTIONS in item.metadata for item in plan.items] == [True, True, False]
    assert plan.items[2].metadata["leaks"] == ["ana@example.com"] and HAZARDS in plan.items[2].metadata
    assert all(item.metadata["evidence"] == ["mem://trajectories/c1"] for item in plan.items)
    assert said(seen) == [
        ("log", "1 item(s) carry case-specific values: held for review"),
        (
            "log",
            "2 item(s) contradict another experience's rule: held for the reviewer to choose which stands",
        ),
        (
            "log",
            "1 item(s) carry hidden characters, injected instructions, tool-call markup, "
            "secrets or personal data: held for review",
        ),
    ]
