"""SessionCommitPolicyTrainer against ovtui's own session API on 127.0.0.1 (and, opt-in, against a
real OpenViking server named by OVTUI_OPENVIKING_URL; skipped otherwise)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_support import threaded_server
from workspace_support import build_sample_workspace, kernel_of

from ovtui.core.domain import (
    Case,
    CriterionResult,
    ExperienceSet,
    Message,
    Rollout,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    TextPart,
    ToolPart,
)
from ovtui.memory.memory_diff import MemoryDiff
from ovtui.servers.openviking.app import create_session_app
from ovtui.storage.config_file import load_config
from ovtui.train.components.session_commit_trainer import SessionCommitPolicyTrainer
from ovtui.wiring.registry import TRAINERS
from ovtui.wiring.workspace import Workspace


def rollout(passed: bool = True, action: str = "cancel") -> Rollout:
    """A rollout of ``<action>_order`` (two actions train two different experiences)."""
    case = Case(
        name=f"{action}_order_7",
        task_signature=f"{action}_order",
        input={"user_query": f"{action.title()} my order 7", "policy": "dropped from the CaseSpec"},
        rubric=Rubric(name=f"{action}_order", criteria=[RubricCriterion(name="cancelled")]),
    )
    messages = [
        Message(role="user", parts=[TextPart(text="Please cancel my order 7.")]),
        Message(
            role="assistant",
            parts=[
                ToolPart(tool_id="a", tool_name="get_order", tool_input={"order_id": "7"}, tool_output="ok")
            ],
        ),
        Message(
            role="assistant",
            parts=[
                ToolPart(
                    tool_id="b", tool_name=f"{action}_order", tool_input={"order_id": "7"}, tool_output="ok"
                )
            ],
        ),
        Message(role="assistant", parts=[TextPart(text="Done, order 7 is cancelled.")]),
    ]
    evaluation = RubricEvaluation(
        passed=passed,
        score=1.0 if passed else 0.0,
        criterion_results=[CriterionResult(criterion_name="cancelled", passed=passed, score=float(passed))],
    )
    return Rollout(case=case, messages=messages, evaluation=evaluation)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = build_sample_workspace(tmp_path_factory.mktemp("trainer") / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    with threaded_server(create_session_app(Workspace(root), watch_inbox=False)) as url:
        yield url, root


def test_rollouts_train_through_the_session_api(server: tuple[str, Path]) -> None:
    url, root = server

    async def run() -> None:
        trainer = SessionCommitPolicyTrainer(url, timeout=60)
        try:
            # Two different tasks: whether the server batches them together or not (it flushes as
            # soon as no other commit is being analysed), each commit's training changes a file.
            pair = [rollout(), rollout(action="refund")]
            result = await trainer.train_rollouts(pair, ExperienceSet(root_uri="x"))
        finally:
            await trainer.close()
        assert result.errors == []
        tasks = result.metadata["tasks"]
        assert [t["status"] for t in tasks] == ["completed", "completed"]
        for task in tasks:
            archive = task["result"]["archive_uri"].split("/default/", 1)[1]
            messages = (root / archive / "messages.jsonl").read_text().splitlines()
            assert "[OpenViking Training CaseSpec]" in messages[0] and "dropped from" not in messages[0]
            assert "[OpenViking OutcomeEvaluation]" in messages[-1]
            diff = MemoryDiff.model_validate_json((root / archive / "memory_diff.json").read_text())
            assert diff.metadata["history_ids"], diff.metadata  # the server trained and applied
        assert (root / "memories/experiences/cancel_order.md").is_file()
        assert (root / "memories/experiences/refund_order.md").is_file()

    asyncio.run(run())


def test_a_refused_session_is_that_rollouts_error(server: tuple[str, Path]) -> None:
    url, _ = server

    async def run() -> None:
        trainer = SessionCommitPolicyTrainer(url + "/nowhere", timeout=5)
        try:
            result = await trainer.train_rollouts([rollout()], ExperienceSet(root_uri="x"))
        finally:
            await trainer.close()
        assert len(result.errors) == 1 and "cancel_order_7" in result.errors[0] and "404" in result.errors[0]

    asyncio.run(run())


def test_registered_by_name(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "ovtui.toml").write_text(
        (root / "ovtui.toml").read_text() + '\n[sessions]\napi_url = "http://127.0.0.1:9"\n'
    )
    workspace = Workspace(root, load_config(root))
    resources = kernel_of(workspace).resources
    trainer = TRAINERS.get("session-commit")(resources, None, ExperienceSet(root_uri="x"))  # type: ignore[arg-type]
    assert isinstance(trainer, SessionCommitPolicyTrainer) and trainer.base_url == "http://127.0.0.1:9"
    asyncio.run(trainer.close())


@pytest.mark.skipif(
    not os.environ.get("OVTUI_OPENVIKING_URL"), reason="set OVTUI_OPENVIKING_URL to a real OpenViking"
)
def test_against_a_real_openviking_server() -> None:
    async def run() -> None:
        trainer = SessionCommitPolicyTrainer(
            os.environ["OVTUI_OPENVIKING_URL"], api_key=os.environ.get("OVTUI_OPENVIKING_KEY"), timeout=600
        )
        try:
            result = await trainer.train_rollouts([rollout()], ExperienceSet(root_uri="x"))
        finally:
            await trainer.close()
        assert result.errors == [] and result.metadata["tasks"][0]["status"] == "completed"

    asyncio.run(run())
