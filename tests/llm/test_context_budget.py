"""The context budget: the window comes from the endpoint, else the configuration, else the safe
default; prompts are cut to fit it by priority, visibly, and one whose required parts cannot fit is an
error before any call, never a prompt left for the server to cut."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ovtui.core.domain import Experience, PolicyStatus, RolloutAnalysis
from ovtui.llm.budget import (
    DEFAULT_CONTEXT_WINDOW,
    ContextBudgetError,
    estimate_tokens,
    prompt_budget,
    shrink,
)
from ovtui.memory.store import MemoryStore
from ovtui.testing import realistic
from ovtui.testing.helpers import make_client
from ovtui.testing.openai_server import FakeOpenAIServer, RecordedRequest, Reply
from ovtui.train.backends.llm import LLMGradientProposer, LLMTrajectoryExtractor

pytest_plugins = ["ovtui.testing.fixtures"]

CUT = "cut to fit the context window]"


def billed(request: RecordedRequest) -> int:
    """The request's size by the budget's own estimate: messages, schema, tools."""
    texts = [str(m.get("content") or "") for m in request.messages]
    texts += [json.dumps(request.body.get("response_format")), json.dumps(request.body.get("tools") or [])]
    return sum(estimate_tokens(t) for t in texts)


async def test_the_window_the_endpoint_reports_comes_first(fake: FakeOpenAIServer) -> None:
    fake.context_window = 32_768
    client = make_client(fake, context_window=8192)
    assert await client.context_window() == 32_768
    fake.context_window = 2048
    assert await client.context_window() == 32_768  # asked once per client
    await client.aclose()
    fake.context_window = None
    configured = make_client(fake, context_window=8192)
    assert await configured.context_window() == 8192
    await configured.aclose()
    default = make_client(fake)
    assert await default.context_window() == DEFAULT_CONTEXT_WINDOW
    await default.aclose()


def test_shrink_keeps_the_heading_and_the_end() -> None:
    lines = ["## Rollout", "### Rubric", "- must confirm"] + [f"[user] message {i}" for i in range(400)]
    text = shrink("\n".join(lines), 300)
    assert estimate_tokens(text) <= 300
    kept = text.splitlines()
    assert kept[:3] == lines[:3] and kept[-1] == "[user] message 399"
    assert kept[3].startswith("[… ") and kept[3].endswith(f"lines {CUT}")
    long = shrink("x" * 10_000, 200)
    assert long.startswith("x" * 160) and CUT in long


async def test_a_long_conversation_is_cut_and_the_evaluation_kept_whole(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    rollout = realistic.airline_rollout(0)
    rollout.messages = rollout.messages * 30  # far beyond a 4,096-token window
    assert rollout.evaluation is not None
    fake.push(Reply.json({"trajectories": []}))
    client = make_client(fake, context_window=4096)
    await LLMTrajectoryExtractor(client, MemoryStore.open(tmp_path)).extract(rollout, rollout.evaluation, "")
    await client.aclose()
    [request] = fake.chat_requests
    user = request.messages[1]["content"]
    assert CUT in user and "## Rollout of case `airline_cancel_0`" in user and "### Rubric" in user
    verdict = "- no_refund_without_insurance: FAILED (score 0.00) — promised a refund on a non-refundable"
    assert user.endswith(f"{verdict} economy booking")
    assert billed(request) <= prompt_budget(4096)


def candidate(name: str, lines: int) -> Experience:
    body = "\n".join(f"- rule {i} of {name}: ALWAYS check the booking" for i in range(lines))
    return Experience(
        name=name,
        uri=f"{realistic.PREFIX}/experiences/{name}.md",
        version=1,
        status=PolicyStatus.PRODUCTION,
        content=f"## Situation\n{body}\n## Approach\n- x\n## Reflect\n- y",
    )


async def test_candidates_that_do_not_fit_are_left_out_whole_and_named(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    rollout = realistic.airline_rollout(1)
    assert rollout.evaluation is not None
    trajectory = realistic.trajectory(rollout)
    analysis = RolloutAnalysis(rollout=rollout, evaluation=rollout.evaluation, trajectories=[trajectory])
    candidates = [candidate(f"intent_{i}", 40) for i in range(5)]
    fake.push(Reply.json({"experiences": []}))
    client = make_client(fake, context_window=4096)
    await LLMGradientProposer(client, MemoryStore.open(tmp_path)).propose(trajectory, analysis, candidates)
    await client.aclose()
    [request] = fake.chat_requests
    user = request.messages[1]["content"]
    shown = [c for c in candidates if c.content in user]  # a candidate is shown whole or not at all
    left = [c for c in candidates if c.uri not in user.split("file(s)")[0]]
    assert shown and left and len(shown) + len(left) == 5
    assert shown == candidates[: len(shown)]  # the most similar stay
    assert f"file(s) {CUT}: " + ", ".join(c.uri for c in left) in user
    assert trajectory.content in user  # the trajectory is cut only after the files are out
    assert billed(request) <= prompt_budget(4096)


async def test_required_parts_that_cannot_fit_are_an_error_before_any_call(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    rollout = realistic.airline_rollout(0)
    assert rollout.evaluation is not None
    evaluation = rollout.evaluation.model_copy(update={"feedback": ["the agent promised a refund " * 900]})
    client = make_client(fake, context_window=4096)
    with pytest.raises(ContextBudgetError, match=r"context window of 4096 \(\[llm\] context_window\)"):
        await LLMTrajectoryExtractor(client, MemoryStore.open(tmp_path)).extract(rollout, evaluation, "")
    await client.aclose()
    assert fake.chat_requests == []
