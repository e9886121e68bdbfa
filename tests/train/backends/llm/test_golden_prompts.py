"""Prompts as the model sees them: every stage, fed inputs in OpenViking's shapes (link objects, a
task_query, nested JSON tool outputs, Chinese text, a peer), through the real client to a real HTTP
server. The exact requests are compared with the snapshots in ``tests/fixtures/golden_prompts/``
(``OVTUI_UPDATE_GOLDEN=1`` rewrites them; read the diff before committing it), and checked for what
must never reach a model: Python reprs, bookkeeping it does not edit, and case-specific text in the
system part (which is the same for every call of a stage, so a server can cache it)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import (
    ExperienceSet,
    PatchSemanticGradient,
    PolicyPlanItem,
    PolicyUpdatePlan,
    RolloutAnalysis,
)
from ovtui.core.events import EventBus
from ovtui.core.experience_files import file_from_experience
from ovtui.core.fileformat import MemoryFile
from ovtui.llm.client import LLMClient
from ovtui.memory.store import MemoryStore
from ovtui.protocols.sessions import MemoryPolicy
from ovtui.testing import realistic
from ovtui.testing.helpers import make_client
from ovtui.testing.openai_server import FakeOpenAIServer, RecordedRequest, Reply
from ovtui.train.backends.llm import LLMGradientProposer, LLMPlanMerger, LLMTrajectoryExtractor
from ovtui.train.backends.llm.session_extractor import LLMSessionExtractor
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.rollout_executor import SingleTurnLLMRolloutExecutor
from ovtui.train.review.gates.model_contradictions import ModelContradictionCheck

pytest_plugins = ["ovtui.testing.fixtures"]

GOLDEN = Path(__file__).resolve().parents[3] / "fixtures" / "golden_prompts"
UPDATE = os.environ.get("OVTUI_UPDATE_GOLDEN") == "1"

# What a Python repr looks like in a prompt: a dict or list of strings, Python's constants, a string's
# escaped newline.
REPR = re.compile(r"\{'|\['|': |\bNone\b|\bTrue\b|\bFalse\b|\\n")
# Bookkeeping the model never edits: file bookkeeping fields and the parts of a link object.
BOOKKEEPING = (
    "memory_type:",
    "created_at",
    "updated_at",
    "from_uri",
    "to_uri",
    "link_type",
    "weight",
    "match_text",
    "case_uris",
    "source_archive_uri",
    "task_query",
)
FILE_BLOCK = re.compile(r"=== FILE .*?=== END FILE ===", re.S)
# Values of the cases that must stay in the user part (never in the cached, shared system part).
CASE_VALUES = ("NO6JO3", "AIXC49", "mia_li_3668", "604", "wang_fang", "金卡", "西雅图", "Tom")


def render_request(request: RecordedRequest) -> str:
    """One request as a reviewer reads it: each message, then the answer schema and the tools."""
    parts = []
    for message in request.messages:
        head = f"### {message['role']}"
        if message.get("tool_call_id"):
            head += f" ({message['tool_call_id']})"
        parts.append(f"{head}\n{message.get('content') or ''}")
        if message.get("tool_calls"):
            parts.append(json.dumps(message["tool_calls"], ensure_ascii=False, indent=1))
    schema = (request.body.get("response_format") or {}).get("json_schema")
    if schema is not None:
        parts.append(f"### response_format {schema['name']}\n{json.dumps(schema['schema'], indent=1)}")
    if request.body.get("tools"):
        parts.append(f"### tools\n{json.dumps(request.body['tools'], indent=1)}")
    return "\n\n".join(parts) + "\n"


def snapshot(name: str, requests: list[RecordedRequest]) -> str:
    text = "\n".join(f"======== request {i + 1}\n{render_request(r)}" for i, r in enumerate(requests))
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, (
        f"{path.name} changed (OVTUI_UPDATE_GOLDEN=1 rewrites it)"
    )
    return text


def model_text(request: RecordedRequest) -> str:
    """What the model reads: the message contents (the schema is checked on its own)."""
    return "\n".join(str(m.get("content") or "") for m in request.messages)


def assert_clean(requests: list[RecordedRequest]) -> None:
    for request in requests:
        text = model_text(request)
        found = REPR.search(text)
        assert found is None, (
            f"a Python repr reaches the model: …{text[max(found.start() - 80, 0) : found.end() + 40]}…"
        )
        for block in FILE_BLOCK.findall(text):  # the memory files shown (a tool output may name a date)
            for word in BOOKKEEPING:
                assert word not in block, f"bookkeeping {word!r} reaches the model in {block[:80]}"
        system = str(request.messages[0].get("content") or "")
        assert request.messages[0]["role"] == "system"
        for value in CASE_VALUES:
            assert value not in system, f"case-specific {value!r} in the system part"


def linked_store(root: Path, links: int = 11) -> tuple[MemoryStore, ExperienceSet]:
    realistic.write_experiences(root, links=links)
    store = MemoryStore.open(root)
    return store, ExperienceSetLoader(store).load_sync()


Stage = Callable[[LLMClient, Path], Awaitable[object]]


async def run_stage(
    fake: FakeOpenAIServer, tmp_path: Path, replies: list[Reply], stage: Stage
) -> list[RecordedRequest]:
    fake.push(*replies)
    client = make_client(fake)
    try:
        await stage(client, tmp_path)
    finally:
        await client.aclose()
    assert fake.pending == 0
    return fake.chat_requests


def extraction_reply(name: str) -> Reply:
    item = {
        "trajectory_name": name,
        "content": "## Task\n- x\n## Steps\n1. x\n## Outcome\n- x",
        "outcome": "success",
    }
    return Reply.json({"trajectories": [item]})


async def test_extraction_of_an_airline_and_a_chinese_rollout(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    async def stage(client: LLMClient, root: Path) -> None:
        store = MemoryStore.open(root)
        extractor = LLMTrajectoryExtractor(client, store)
        for rollout in (realistic.airline_rollout(0), realistic.cjk_rollout()):
            assert rollout.evaluation is not None
            await extractor.extract(rollout, rollout.evaluation, "")

    requests = await run_stage(
        fake, tmp_path, [extraction_reply("cancel_reservation"), extraction_reply("baggage_allowance")], stage
    )
    text = snapshot("extract", requests)
    assert_clean(requests)
    assert requests[0].messages[0] == requests[1].messages[0]  # one system part for every rollout
    asked = requests[0].body["response_format"]["json_schema"]["schema"]["properties"]["trajectories"]
    # What ovtui fills in itself is not asked of the model.
    assert set(asked["items"]["properties"]) == {"trajectory_name", "content", "outcome", "retrieval_anchor"}
    assert "insurance=no" in text and "membership=gold" in text and "created_at=2026-05-02T15:12:25" in text
    assert "经济舱可以免费托运几件行李" in text  # Chinese as it is, not \\u escapes


async def test_proposal_against_linked_candidates_with_a_look_up(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    async def stage(client: LLMClient, root: Path) -> None:
        store, policy = linked_store(root)
        rollout = realistic.airline_rollout(0)
        assert rollout.evaluation is not None
        trajectory = realistic.trajectory(rollout)
        analysis = RolloutAnalysis(rollout=rollout, evaluation=rollout.evaluation, trajectories=[trajectory])
        candidates = [p for p in policy.policies if p.name in ("cancel_reservation", "refund_status")]
        await LLMGradientProposer(client, store).propose(trajectory, analysis, candidates)

    edit = {
        "experience_name": "cancel_reservation",
        "content": "<<<<<<< SEARCH\n- NEVER promise a refund the policy does not allow\n=======\n"
        "- NEVER promise a refund the policy does not allow: read insurance and created_at first\n"
        ">>>>>>> REPLACE",
        "rationale": "the agent promised a refund",
    }
    replies = [
        Reply.tools(("search", {"query": "refund insurance", "memory_type": "experiences"})),
        Reply.json({"experiences": [edit]}),
    ]
    requests = await run_stage(fake, tmp_path, replies, stage)
    snapshot("propose", requests)
    assert_clean(requests)
    first = model_text(requests[0])
    # Every candidate's editable text is shown whole, and its links by the trajectories' names.
    for name in ("cancel_reservation", "refund_status"):
        assert realistic.EXPERIENCES[name] in first
    assert "links: cancel_reservation_case_0_20260219101530, " in first and "… 8 more" in first
    assert "tags: airline, cancel;" in first
    assert "promised a refund on a non-refundable economy booking" in first  # the evaluator's words


async def test_merge_of_a_batch(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    async def stage(client: LLMClient, root: Path) -> None:
        store, policy = linked_store(root)
        base = policy.by_name()["cancel_reservation"]
        before = file_from_experience(base)
        edited = before.content.replace(
            "## Reflect\n", "## Reflect\n- ALWAYS read insurance and created_at\n"
        )
        new = "## Situation\n- 用户询问行李额度\n## Approach\n- 查会员等级和舱位\n## Reflect\n- NEVER guess"
        gradients = [
            PatchSemanticGradient(
                before_file=before,
                after_file=MemoryFile(uri=before.uri, content=edited, fields=dict(before.fields)),
                base_version=before.version,
                evidence_trajectory_uris=[realistic.trajectory(realistic.airline_rollout(i)).uri],
                rationale="refund promised without insurance",
            )
            for i in range(2)
        ]
        gradients.append(
            PatchSemanticGradient(
                before_file=None,
                after_file=MemoryFile(
                    uri=f"{realistic.PREFIX}/experiences/baggage_questions.md",
                    content=new,
                    fields={"experience_name": "baggage_questions"},
                ),
                base_version=None,
                evidence_trajectory_uris=[realistic.trajectory(realistic.cjk_rollout(), "baggage").uri],
                rationale="a question in Chinese",
            )
        )
        similar = [policy.by_name()["baggage_allowance"]]
        await LLMPlanMerger(client, store).merge(gradients, policy, similar)

    merged = {
        "experience_name": "cancel_reservation",
        "content": "x",
        "source_gradients": [0, 1],
        "rationale": "r",
    }
    requests = await run_stage(fake, tmp_path, [Reply.json({"experiences": [merged]})], stage)
    text = snapshot("merge", requests)
    assert_clean(requests)
    assert realistic.EXPERIENCES["baggage_allowance"] in text and "the same change as proposal [0]" in text


async def test_the_contradiction_check_of_an_edit(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    async def stage(client: LLMClient, root: Path) -> None:
        _, policy = linked_store(root)
        base = policy.by_name()["cancel_reservation"]
        edited = base.content.replace("## Reflect\n", "## Reflect\n- Offer a voucher for the trouble\n")
        item = PolicyPlanItem(
            kind="upsert",
            target_name=base.name,
            target_uri=base.uri,
            before_content=base.content,
            after_content=edited,
            base_version=base.version,
        )
        plan = PolicyUpdatePlan(items=[item])
        assert await ModelContradictionCheck(client).mark(plan, policy, EventBus()) == 1

    requests = await run_stage(fake, tmp_path, [Reply.json({"contradictions": []})], stage)
    text = snapshot("contradictions", requests)
    assert_clean(requests)
    assert "- Offer a voucher for the trouble" in text


async def test_session_extraction_with_a_peer(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    async def stage(client: LLMClient, root: Path) -> None:
        realistic.write_user_memories(root)
        store = MemoryStore.open(root)
        policy = MemoryPolicy.model_validate({"peer": {"allowed_peer_ids": ["tom"]}})
        await LLMSessionExtractor(client, store).extract(
            realistic.session_messages(), "s1", "archive_001", policy
        )

    answer = {"preferences": [{"topic": "food", "content": "- 不吃海鲜"}]}
    requests = await run_stage(fake, tmp_path, [Reply.json(answer)], stage)
    text = snapshot("session_extract", requests)
    assert_clean(requests)
    assert realistic.PROFILE in text and "(peer tom)" in text


async def test_the_agent_sees_the_relevant_experiences(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    async def stage(client: LLMClient, root: Path) -> None:
        _, policy = linked_store(root)
        cases = [realistic.airline_case(1), realistic.cjk_rollout().case]
        agent = SingleTurnLLMRolloutExecutor(client, max_experiences=2)
        for case in cases:  # one at a time: the snapshot's order is the cases'
            await agent.execute([case], policy, ExecutionContext(policy_snapshot_id="s"))

    requests = await run_stage(fake, tmp_path, [Reply.text("ok"), Reply.text("好的")], stage)
    text = snapshot("agent", requests)
    for request in requests:
        assert REPR.search(model_text(request)) is None
        assert not any(v in str(request.messages[0]["content"]) for v in CASE_VALUES)
    assert realistic.EXPERIENCES["cancel_reservation"] in text


@pytest.mark.parametrize(
    "value",
    [
        [realistic.link("cancel_reservation", 0)],
        [{"name": "unnamed", "count": None}],
        {"nested": True},
        True,
        None,
    ],
)
def test_no_field_value_renders_as_a_python_repr(value: Any) -> None:
    from ovtui.llm.loop_tools import render_file

    memory = MemoryFile(uri=f"{realistic.PREFIX}/experiences/x.md", content="body", fields={"odd": value})
    assert REPR.search(render_file(memory)) is None
