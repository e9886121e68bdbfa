"""The whole kernel with the LLM backend against a real local OpenAI-compatible server."""

from __future__ import annotations

import asyncio
from pathlib import Path

from workspace_support import llm_sample_workspace

from ovtui.core.events import Event
from ovtui.core.fileformat import parse_memory
from ovtui.testing.helpers import KEY_ENV, SECRET_KEY
from ovtui.testing.openai_server import FakeOpenAIServer
from ovtui.testing.session_model import GUIDANCE
from ovtui.testing.session_model import training_model as scripted_model
from ovtui.wiring.workspace import TrainOptions, Workspace

pytest_plugins = ["ovtui.testing.fixtures"]


async def test_train_with_the_llm_backend(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    root = tmp_path / "ws"
    llm_sample_workspace(root, fake.base_url, KEY_ENV)
    fake.respond_with(scripted_model)
    workspace = Workspace(root)
    seen: list[Event] = []
    report = await workspace.runs.train(TrainOptions(epochs=1, limit=8, eval_split=None), [seen.append])

    assert report.errors == [] and report.backend == "llm:fake-model"
    # Every model call is reported while the run goes on, not only in the final report.
    calls = [e.data for e in seen if e.kind == "usage"]
    assert len(calls) == 18 and {c["stage"] for c in calls} == {"extract", "propose", "merge"}
    assert all(c["prompt_tokens"] > 0 and c["model"] == "fake-model" for c in calls)
    stages = {name: int(values["calls"]) for name, values in report.usage.items() if "calls" in values}
    # 8 rollouts in 2 batches: one extract per rollout, one propose per trajectory, one merge per batch.
    assert stages.get("extract") == 8 and stages.get("propose") == 8 and stages.get("merge") == 2, (
        report.usage
    )
    assert len(fake.chat_requests) == 18
    learned = parse_memory((root / "memories/experiences/booking_changes.md").read_text())
    assert learned.content == GUIDANCE
    assert learned.fields["status"] == "draft"
    assert {link["link_type"] for link in learned.fields["links"]} == {"derived_from"}
    for path in root.rglob("*"):  # the key reached the server, never a file
        if path.is_file():
            assert SECRET_KEY not in path.read_text(errors="ignore"), path
    assert any(
        SECRET_KEY in r.headers.get("authorization", r.headers.get("Authorization", ""))
        for r in fake.chat_requests
    )


def test_one_workspace_trains_in_one_event_loop_after_another(tmp_path: Path, fake: FakeOpenAIServer) -> None:
    """A command may run ``asyncio.run`` more than once over one workspace: the LLM client's
    connections of the first loop are not reused in the next (they would fail there), and each
    loop's are closed as it ends."""
    root = tmp_path / "ws"
    llm_sample_workspace(root, fake.base_url, KEY_ENV)
    fake.respond_with(scripted_model)
    workspace = Workspace(root)

    async def train_then_close() -> list[str]:
        try:
            report = await workspace.runs.train(TrainOptions(epochs=1, limit=4, eval_split=None), [])
            assert fake.open_connections > 0  # kept alive for the next call
        finally:
            await workspace.aclose()
        assert await asyncio.to_thread(fake.wait_for_open_connections, 0)  # closed by the client
        return report.errors

    assert asyncio.run(train_then_close()) == []
    calls = len(fake.chat_requests)
    assert asyncio.run(train_then_close()) == []
    assert len(fake.chat_requests) > calls  # the second loop's run reached the model too
    # Without the close, the second loop's calls still get their own connections.
    second = Workspace(root)
    assert asyncio.run(second.runs.train(TrainOptions(epochs=1, limit=4, eval_split=None), [])).errors == []
    assert asyncio.run(second.runs.train(TrainOptions(epochs=1, limit=4, eval_split=None), [])).errors == []
