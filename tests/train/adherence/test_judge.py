"""The model's judgement of the lines the offline check left unchecked, through the real openai
client to the fake OpenAI-compatible server: off by default (no call), on at most one call per
rollout with unchecked lines (none for one without), answers naming lines not asked dropped, the
model's verdicts marked as its own, a failed call a warning that leaves the lines unchecked."""

from __future__ import annotations

from pathlib import Path

import pytest
from workspace_support import build_workspace, kernel_of

from ovtui.core.domain import (
    Case,
    Experience,
    ExperienceSet,
    Message,
    PolicyStatus,
    Rollout,
    Rubric,
    RubricEvaluation,
    TextPart,
    ToolPart,
)
from ovtui.core.events import Event, EventBus
from ovtui.llm.client import LLMClient
from ovtui.memory.ledger_state import ROLLOUT_ID
from ovtui.storage.paths import WorkspacePaths
from ovtui.testing.helpers import KEY_ENV, make_client
from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.train.adherence.judge import STAGE, ModelJudge
from ovtui.train.adherence.recorder import AdherenceRecorder, DirectiveReader
from ovtui.train.adherence.store import BY_MODEL, AdherenceStore, DirectiveRecord
from ovtui.wiring.workspace import Workspace

pytest_plugins = ["ovtui.testing.fixtures"]

ROOT = "viking://user/default/memories/experiences"
POLITE = "Keep the tone polite and apologise for the trouble"
ORDER = "ALWAYS call get_reservation before cancel_reservation"
TOOLS = ("get_reservation", "cancel_reservation", "refund_payment")


def experience(name: str, *lines: str) -> Experience:
    body = "## Situation\n- A customer asks to cancel\n## Approach\n" + "\n".join(f"- {x}" for x in lines)
    return Experience(
        name=name, uri=f"{ROOT}/{name}.md", version=1, status=PolicyStatus.PRODUCTION, content=body
    )


POLICY = ExperienceSet(
    root_uri=ROOT,
    policies=[experience("cancel", ORDER, POLITE), experience("no_refunds", "NEVER call refund_payment")],
)


def rollout(rollout_id: str, *used: str, passed: bool = True) -> Rollout:
    calls = [ToolPart(tool_id=f"c{i}", tool_name=t, tool_output="{}") for i, t in enumerate(TOOLS[:2])]
    messages = [
        Message(role="user", parts=[TextPart(text="Please cancel my booking ABC123")]),
        Message(role="assistant", parts=[*calls, TextPart(text="Sorry for the trouble: it is cancelled.")]),
    ]
    case = Case(name=f"case_{rollout_id}", task_signature="cancel", rubric=Rubric(name="r"))
    return Rollout(
        case=case,
        messages=messages,
        evaluation=RubricEvaluation(passed=passed, score=1.0 if passed else 0.0),
        metadata={ROLLOUT_ID: rollout_id, "experiences_used": list(used)},
    )


def recorder(root: Path, client: LLMClient | None) -> AdherenceRecorder:
    judge = None
    if client is not None:
        made: LLMClient = client
        judge = ModelJudge(lambda: made)
    return AdherenceRecorder(AdherenceStore(WorkspacePaths(root)), DirectiveReader(None, TOOLS), judge)


def polite(store: AdherenceStore) -> DirectiveRecord:
    [found] = [d for d in store.read().experiences[f"{ROOT}/cancel.md"].directives if d.line == POLITE]
    return found


def verdicts(*found: tuple[int, str]) -> Reply:
    return Reply.json({"verdicts": [{"line": line, "verdict": verdict} for line, verdict in found]})


async def test_off_by_default_no_call_and_the_line_stays_unchecked(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    record = recorder(tmp_path, None)
    await record.record_rollouts(
        [rollout("r1", "cancel"), rollout("r2", "no_refunds")], POLICY, [], EventBus()
    )
    assert fake.chat_requests == []
    kept = polite(record.store)
    assert (kept.unchecked, kept.followed, kept.judged) == (1, 0, {})


async def test_one_call_per_rollout_with_unchecked_lines_bogus_lines_dropped(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    stages: list[str] = []
    client = make_client(fake, on_call=lambda stage, _usage, _seconds: stages.append(stage))
    record = recorder(tmp_path, client)
    try:
        fake.push(verdicts((1, "followed"), (7, "violated"), (0, "violated")))  # 7 and 0 were not asked
        batch = [rollout("r1", "cancel", "no_refunds"), rollout("r2", "no_refunds")]
        await record.record_rollouts(batch, POLICY, [], EventBus())
        assert len(fake.chat_requests) == 1  # r2's lines were all checked offline: no call for it
        [request] = fake.chat_requests
        assert request.schema_name == "adherence" and stages == [STAGE]  # usage counts it as its own
        prompt = request.messages[1]["content"]
        assert f"## Experience `cancel`\n1: {POLITE}" in prompt and "call get_reservation(" in prompt
        assert ORDER not in prompt and "refund_payment" not in prompt  # the offline check's lines

        fake.push(verdicts((1, "violated")))
        await record.record_rollouts([rollout("r3", "cancel", passed=False)], POLICY, [], EventBus())
        await record.record_rollouts([rollout("r1", "cancel")], POLICY, [], EventBus())  # recorded: no call
    finally:
        await client.aclose()

    assert len(fake.chat_requests) == 2
    kept = polite(record.store)
    assert (kept.followed, kept.violated, kept.unchecked) == (1, 1, 0)
    assert kept.judged == {"followed": 1, "violated": 1}  # both the model's, so a person can tell
    [violation] = kept.violations
    assert (violation.by, violation.case) == (BY_MODEL, "case_r3")
    experiences = record.store.read().experiences
    [order] = [d for d in experiences[f"{ROOT}/cancel.md"].directives if d.line == ORDER]
    assert (order.followed, order.judged) == (2, {})  # checked offline, never asked
    assert experiences[f"{ROOT}/cancel.md"].violated == 1  # r3's use broke a line, by the model's word


async def test_a_failed_call_is_a_warning_and_the_lines_stay_unchecked(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    fake.respond_with(lambda _request: Reply.server_error())
    logged: list[Event] = []
    client = make_client(fake, max_retries=1)
    record = recorder(tmp_path, client)
    try:
        await record.record_rollouts([rollout("r1", "cancel")], POLICY, [], EventBus([logged.append]))
    finally:
        await client.aclose()

    assert fake.chat_requests  # it was asked (and retried once)
    kept = polite(record.store)
    assert (kept.unchecked, kept.followed, kept.violated, kept.judged) == (1, 0, 0, {})
    [warning] = [e.data for e in logged if e.kind == "log"]
    assert warning["level"] == "warning"
    assert "adherence check of case_r1 (rollout:r1) failed" in warning["message"]
    assert "1 unchecked line(s) stay unchecked" in warning["message"]


async def test_an_answer_off_the_schema_is_not_repaired_with_a_second_call(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    """The budget is one call per rollout: a malformed answer costs no repair request."""
    fake.push(Reply.json({"verdicts": "not a list"}), verdicts((1, "followed")))
    logged: list[Event] = []
    client = make_client(fake)
    record = recorder(tmp_path, client)
    try:
        await record.record_rollouts([rollout("r1", "cancel")], POLICY, [], EventBus([logged.append]))
    finally:
        await client.aclose()

    assert len(fake.chat_requests) == 1
    assert polite(record.store).unchecked == 1
    assert any("stay unchecked" in e.data["message"] for e in logged if e.kind == "log")


@pytest.mark.parametrize(
    ("adherence", "calls"),
    [
        ("", 0),  # a model configured is not enough: off by default
        ("[adherence]\nmodel_judge = false\n", 0),
        ("[adherence]\nmodel_judge = true\n", 1),
    ],
)
async def test_the_switch_in_ovtui_toml(
    tmp_path: Path, fake: FakeOpenAIServer, adherence: str, calls: int
) -> None:
    root = build_workspace(tmp_path / "ws")
    llm = f'[llm]\nbackend = "openai"\nbase_url = "{fake.base_url}"\napi_key_env = "{KEY_ENV}"\n'
    (root / "ovtui.toml").write_text(llm + adherence, encoding="utf-8")
    fake.push(verdicts((1, "followed")))
    workspace = Workspace(root)
    record = kernel_of(workspace).adherence  # the workspace's own, its client from [llm]
    try:
        await record.record_rollouts([rollout("r1", "cancel")], POLICY, [], EventBus())
    finally:
        await workspace.aclose()
    assert len(fake.chat_requests) == calls
    assert (record.judge is not None) is bool(calls)
    assert (polite(record.store).judged == {"followed": 1}) is bool(calls)
