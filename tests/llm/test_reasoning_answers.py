"""A local reasoning model behind a server without structured output: its answer comes with a
<think> block (braces inside) and a ```json fence, and the proposal is still read right, in one call."""

from __future__ import annotations

import json
from pathlib import Path

from ovtui.core.domain import RolloutAnalysis
from ovtui.memory.store import MemoryStore
from ovtui.testing import realistic
from ovtui.testing.helpers import make_client
from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.train.backends.llm import LLMGradientProposer

pytest_plugins = ["ovtui.testing.fixtures"]


async def test_a_thinking_fenced_answer_without_json_schema(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    fake.supports_json_schema = False
    item = {"experience_name": "cancel_reservation", "content": "## Situation\n- x", "rationale": "r"}
    thoughts = '<think>Maybe {"experiences": []} since nothing is new? No, the refund rule is new.</think>'
    fake.push(Reply.text(f"{thoughts}\n```json\n{json.dumps({'experiences': [item]})}\n```"))
    rollout = realistic.airline_rollout(0)
    assert rollout.evaluation is not None
    trajectory = realistic.trajectory(rollout)
    analysis = RolloutAnalysis(rollout=rollout, evaluation=rollout.evaluation, trajectories=[trajectory])
    client = make_client(fake)
    [proposal] = await LLMGradientProposer(client, MemoryStore.open(tmp_path)).propose(
        trajectory, analysis, []
    )
    await client.aclose()
    assert (proposal.experience_name, proposal.content) == ("cancel_reservation", "## Situation\n- x")
    kinds = [(r.body.get("response_format") or {}).get("type") for r in fake.chat_requests]
    assert kinds == ["json_schema", "json_object"]  # refused once, then the answer: no repair round
