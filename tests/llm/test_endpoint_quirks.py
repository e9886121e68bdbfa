"""The whole kernel against a fake server in each quirk mode of small local servers: every mode ends
in the right plan applied, and a refused feature is learned once per endpoint: the second run
(a new client, as a new process would have) asks without it and is refused nothing."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from workspace_support import llm_sample_workspace

from ovtui.core.fileformat import parse_memory
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import ENDPOINTS_FILE
from ovtui.testing import realistic
from ovtui.testing.helpers import KEY_ENV, SECRET_KEY, make_client
from ovtui.testing.openai_server import FakeOpenAIServer, Reply, estimate_tokens
from ovtui.testing.session_model import GUIDANCE
from ovtui.testing.session_model import training_model as scripted_model
from ovtui.train.backends.llm import LLMTrajectoryExtractor
from ovtui.train.backends.llm.render import render_rollout
from ovtui.wiring.workspace import TrainOptions, Workspace

pytest_plugins = ["ovtui.testing.fixtures"]

Quirk = Callable[[FakeOpenAIServer], None]


def no_json_schema(fake: FakeOpenAIServer) -> None:
    fake.supports_json_schema = False


def no_json_at_all(fake: FakeOpenAIServer) -> None:
    fake.supports_json_schema = fake.supports_json_object = False


def no_tools(fake: FakeOpenAIServer) -> None:
    fake.supports_tools = False


def strict_refused(fake: FakeOpenAIServer) -> None:
    fake.supports_strict = False


def unknown_temperature(fake: FakeOpenAIServer) -> None:
    fake.unknown_params = {"temperature"}


def think_blocks(fake: FakeOpenAIServer) -> None:
    fake.think_blocks = True


def fenced_json(fake: FakeOpenAIServer) -> None:
    fake.fenced_json = True


# The quirk, and what the endpoint record holds once it is learned.
REFUSING: dict[str, tuple[Quirk, dict[str, object]]] = {
    "no json_schema": (no_json_schema, {"format_mode": "json_object"}),
    "no response_format at all": (no_json_at_all, {"format_mode": "text"}),
    "no tools": (no_tools, {"tools": False}),
    "strict refused": (strict_refused, {"strict": False, "format_mode": "json_schema"}),
    "400 on an unknown parameter": (unknown_temperature, {"dropped_params": ["temperature"]}),
}
TOLERATED: dict[str, Quirk] = {
    "think blocks": think_blocks,
    "fenced JSON": fenced_json,
}


def sample(root: Path, fake: FakeOpenAIServer) -> Workspace:
    llm_sample_workspace(root, fake.base_url, KEY_ENV)
    fake.respond_with(scripted_model)
    return Workspace(root)


async def train_to_the_right_plan(workspace: Workspace) -> None:
    report = await workspace.runs.train(TrainOptions(epochs=1, limit=8, eval_split=None))
    assert report.errors == []
    learned = parse_memory((workspace.root / "memories/experiences/booking_changes.md").read_text())
    assert learned.content == GUIDANCE


@pytest.mark.parametrize("mode", list(REFUSING))
async def test_a_refused_feature_is_learned_once_and_remembered(
    mode: str, tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    quirk, expected = REFUSING[mode]
    quirk(fake)
    root = tmp_path / "ws"
    await train_to_the_right_plan(sample(root, fake))
    first_run = len(fake.refused_requests)
    assert first_run >= 1

    record = json.loads((root / ENDPOINTS_FILE).read_text())
    [(key, capabilities)] = record["endpoints"].items()
    assert key == f"{fake.base_url} fake-model"
    assert expected.items() <= capabilities.items()

    asked = len(fake.chat_requests)
    await train_to_the_right_plan(Workspace(root))  # a new client: what it knows comes from the file
    assert len(fake.refused_requests) == first_run  # the second run was refused nothing
    assert len(fake.chat_requests) > asked
    for path in root.rglob("*"):
        if path.is_file():
            assert SECRET_KEY not in path.read_text(errors="ignore"), path


@pytest.mark.parametrize("mode", list(TOLERATED))
async def test_a_quirky_answer_still_ends_in_the_right_plan(
    mode: str, tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    TOLERATED[mode](fake)
    await train_to_the_right_plan(sample(tmp_path / "ws", fake))
    assert fake.refused_requests == [] and fake.cut_prompts == 0


async def test_a_4096_token_server_that_cuts_silently_gets_prompts_that_fit(
    tmp_path: Path, fake: FakeOpenAIServer
) -> None:
    """Ollama's default: a 4,096-token window it does not report, a longer prompt cut without a
    word (the model then answers from nothing). The safe default window keeps every prompt inside."""
    fake.prompt_limit = 4096
    rollout = realistic.airline_rollout(0)
    rollout.messages = rollout.messages * 30
    assert rollout.evaluation is not None
    assert estimate_tokens(render_rollout(rollout)) > 2 * fake.prompt_limit  # it would be cut
    drafted = {"trajectory_name": "cancel_refund", "outcome": "failure", "content": "## Steps\n- refunded"}
    fake.push(Reply.json({"trajectories": [drafted]}))
    client = make_client(fake)  # no [llm] context_window, and the server reports none
    extractor = LLMTrajectoryExtractor(client, MemoryStore.open(tmp_path))
    [draft] = await extractor.extract(rollout, rollout.evaluation, "")
    await client.aclose()
    assert (draft.name, draft.content) == ("cancel_refund", "## Steps\n- refunded")
    assert fake.cut_prompts == 0 and len(fake.chat_requests) == 1
