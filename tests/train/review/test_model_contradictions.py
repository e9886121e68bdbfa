"""The model's contradiction check, through the real openai client to the fake OpenAI-compatible
server: one call per item with rules for the same situation, its findings added to the offline
gate's (never removing one), answers naming lines it was not shown dropped, a failed call a warning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from workspace_support import build_workspace, kernel_of

from ovtui.core.context import RunContext
from ovtui.core.domain import Experience, ExperienceSet, PolicyPlanItem, PolicyStatus, PolicyUpdatePlan
from ovtui.core.events import Event, EventBus
from ovtui.plugins import REPORTED_CONTRADICTIONS
from ovtui.testing.helpers import make_client
from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.train.review.gates.contradictions import CONTRADICTIONS, mark_contradictions, unchosen
from ovtui.train.review.gates.model_contradictions import BY_MODEL, STAGE, ModelContradictionCheck
from ovtui.train.review.gates.runner import GateRunner
from ovtui.train.review.policy import ReviewPolicy
from ovtui.wiring.workspace import Workspace

pytest_plugins = ["ovtui.testing.fixtures"]

SITUATION = "## Situation\n- Customer asks to cancel a booking"
EXISTING = f"{SITUATION}\n## Approach\n- Look the booking up\n## Reflect\n- NEVER offer compensation"
VOUCHER = "- Offer a travel voucher for the trouble"
ALWAYS = "- ALWAYS offer compensation"


def policy_set() -> ExperienceSet:
    existing = Experience(
        name="cancellations",
        uri="viking://user/default/memories/experiences/cancellations.md",
        content=EXISTING,
        status=PolicyStatus.PRODUCTION,
        version=1,
    )
    return ExperienceSet(root_uri="viking://user/default/memories/experiences", policies=[existing])


def plan() -> PolicyUpdatePlan:
    same_situation = PolicyPlanItem(
        kind="upsert",
        target_name="quick_cancellations",
        after_content=f"{SITUATION}\n- They are in a hurry\n## Reflect\n{VOUCHER}\n{ALWAYS}",
    )
    elsewhere = PolicyPlanItem(
        kind="upsert",
        target_name="baggage",
        after_content="## Situation\n- Customer asks about baggage\n## Reflect\n- ALWAYS quote it in kg",
    )
    return PolicyUpdatePlan(items=[same_situation, elsewhere], metadata={"plan_id": "plan0000model"})


def answer(*found: dict[str, Any]) -> Reply:
    return Reply.json({"contradictions": list(found)})


async def test_the_models_finding_is_added_beside_the_offline_one_and_holds_the_item(
    fake: FakeOpenAIServer,
) -> None:
    planned, experiences = plan(), policy_set()
    assert mark_contradictions(planned, experiences) == 1  # the offline gate: ALWAYS against NEVER
    fake.push(
        answer(
            {"line": 5, "other": "cancellations", "other_line": 6, "why": "a voucher is compensation"},
            {"line": 6, "other": "cancellations", "other_line": 6, "why": "the same pair the gate found"},
            {"line": 5, "other": "no_such_experience", "other_line": 1, "why": "invented"},
            {"line": 2, "other": "cancellations", "other_line": 99, "why": "lines it was not shown"},
        )
    )
    client = make_client(fake)
    try:
        asked = await ModelContradictionCheck(client).mark(planned, experiences, EventBus())
    finally:
        await client.aclose()

    assert asked == 1 and len(fake.chat_requests) == 1  # the baggage item shares no situation: no call
    [request] = fake.chat_requests
    prompt = request.messages[1]["content"]
    assert f"5: {VOUCHER}" in prompt and "### cancellations\n4: - Look the booking up\n6: - NEVER" in prompt
    assert "Customer asks to cancel" not in prompt  # the situation is what they share, not a rule
    findings = planned.items[0].metadata[CONTRADICTIONS]
    assert [(f["rule"], f["other_line"], f.get("by")) for f in findings] == [
        (ALWAYS, "- NEVER offer compensation", None),
        (VOUCHER, "- NEVER offer compensation", BY_MODEL),
    ]
    assert findings[1]["why"] == "a voucher is compensation" and findings[1]["stands"] is None
    assert CONTRADICTIONS not in planned.items[1].metadata
    assert len(unchosen(planned.items[0])) == 2
    assert ReviewPolicy("all").decisions(planned)[0].decision == "pending"

    # the offline gate run again (a reviewer's edit) keeps the model's finding while its line is there
    mark_contradictions(planned, experiences)
    assert [f.get("by") for f in planned.items[0].metadata[CONTRADICTIONS]] == [None, BY_MODEL]


async def test_a_failed_call_is_a_warning_and_the_offline_finding_stands(fake: FakeOpenAIServer) -> None:
    planned, experiences = plan(), policy_set()
    mark_contradictions(planned, experiences)
    offline = list(planned.items[0].metadata[CONTRADICTIONS])
    fake.respond_with(lambda _request: Reply.server_error())
    logged: list[Event] = []
    client = make_client(fake, max_retries=1)
    try:
        await ModelContradictionCheck(client).mark(planned, experiences, EventBus([logged.append]))
    finally:
        await client.aclose()

    assert planned.items[0].metadata[CONTRADICTIONS] == offline
    [warning] = [e.data for e in logged if e.kind == "log"]
    assert warning["level"] == "warning"
    assert "contradiction check of quick_cancellations failed" in warning["message"]
    assert all(r.body.get("messages") for r in fake.chat_requests) and STAGE == "contradictions"


@pytest.mark.parametrize(
    ("toml", "checked"),
    [
        ("", False),  # the offline learner calls no model
        ('[llm]\nbackend = "openai"\n', True),
        ('[llm]\nbackend = "openai"\n[review]\nmodel_contradictions = false\n', False),
        ("[review]\nmodel_contradictions = true\n", True),
    ],
)
def test_the_check_runs_in_the_engine_when_a_model_is_configured(
    tmp_path: Path, toml: str, checked: bool
) -> None:
    root = build_workspace(tmp_path / "ws")
    (root / "ovtui.toml").write_text(toml, encoding="utf-8")
    engine = kernel_of(Workspace(root)).engine(
        RunContext(), approve="ask", dry_run=True, wait_for_review=False
    )
    assert isinstance(engine.gates, GateRunner)
    [check] = [g for g in engine.gates.gates if isinstance(g, ModelContradictionCheck)]
    assert (check.client is not None) is checked  # without a model it only checks merger reports


def reported(*found: dict[str, str]) -> PolicyUpdatePlan:
    """The plan as a merger that looks for contradictions hands it over: its reports on the item."""
    planned = plan()
    planned.items[0].metadata[REPORTED_CONTRADICTIONS] = [dict(f, why="w") for f in found]
    return planned


async def test_a_merger_report_quoting_real_lines_is_a_finding_and_costs_no_call(
    fake: FakeOpenAIServer,
) -> None:
    planned = reported(
        {
            "line": "Offer a travel voucher for the trouble",
            "other": "cancellations",
            "other_line": "- never offer COMPENSATION",
        },  # bullets, spacing and case aside: real lines
        {"line": "- Offer a refund", "other": "cancellations", "other_line": "- NEVER offer compensation"},
        {"line": VOUCHER, "other": "no_such_experience", "other_line": "- NEVER offer compensation"},
        {"line": VOUCHER, "other": "cancellations", "other_line": "- a line it does not have"},
    )
    client = make_client(fake)
    try:
        asked = await ModelContradictionCheck(client).mark(planned, policy_set(), EventBus())
    finally:
        await client.aclose()

    # The baggage item had no report and shares no situation: nothing to ask either.
    assert asked == 0 and fake.chat_requests == []
    [finding] = planned.items[0].metadata[CONTRADICTIONS]
    assert (finding["line"], finding["rule"], finding["other_line"], finding["by"]) == (
        5,
        VOUCHER,
        "- NEVER offer compensation",
        BY_MODEL,
    )
    assert all(REPORTED_CONTRADICTIONS not in item.metadata for item in planned.items)  # never stored
    assert ReviewPolicy("all").decisions(planned)[0].decision == "pending"


async def test_an_item_no_merger_looked_at_is_asked_only_with_a_model(fake: FakeOpenAIServer) -> None:
    without_model = plan()
    assert await ModelContradictionCheck(None).mark(without_model, policy_set(), EventBus()) == 0
    assert CONTRADICTIONS not in without_model.items[0].metadata

    looked = reported()  # the merger looked and saw none: its empty answer is the answer
    client = make_client(fake)
    try:
        assert await ModelContradictionCheck(client).mark(looked, policy_set(), EventBus()) == 0
    finally:
        await client.aclose()
    assert fake.chat_requests == [] and CONTRADICTIONS not in looked.items[0].metadata
