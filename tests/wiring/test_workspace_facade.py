"""The Workspace facade: each run says ``run_started`` once with what it runs, and its coroutines
wait for locks in threads, so the event loop they run on keeps serving everything else."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from filelock import FileLock
from workspace_support import build_sample_workspace

from ovtui.core.events import Event
from ovtui.storage.paths import PENDING_FOLDER
from ovtui.train.review.pending import LOCKS_FOLDER
from ovtui.wiring.workspace import TrainOptions, Workspace


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return build_sample_workspace(tmp_path / "ws")


def started(events: list[Event]) -> dict[str, object]:
    [event] = [e for e in events if e.kind == "run_started"]
    return event.data


async def test_every_run_says_run_started_once_with_what_it_runs(sample: Path) -> None:
    workspace = Workspace(sample)
    trained: list[Event] = []
    report = await workspace.runs.train(
        TrainOptions(epochs=1, approve="ask", eval_split=None, limit=4), [trained.append]
    )
    assert started(trained) == {
        "run_id": report.run_id,
        "command": "train",
        "dataset": "support",
        "backend": "offline",
        "epochs": 1,
        "approve": "ask",
        "dry_run": False,
    }
    assert trained[-1].kind == "run_finished"
    evaluated: list[Event] = []
    report = await workspace.runs.evaluate(listeners=[evaluated.append])
    assert started(evaluated) == {
        "run_id": report.run_id,
        "command": "eval",
        "dataset": "support",
        "backend": "offline",
    }


async def test_an_apply_waits_for_the_plans_lock_without_holding_up_the_loop(sample: Path) -> None:
    workspace = Workspace(sample)
    report = await workspace.runs.train(TrainOptions(epochs=1, approve="ask", eval_split=None, limit=4))
    [plan_id] = report.pending_plans
    workspace.review.decide_all(plan_id, "approved")
    other_writer = FileLock(
        str(sample / PENDING_FOLDER / LOCKS_FOLDER / f"{plan_id}.lock"),
        thread_local=False,
        is_singleton=False,
    )
    served = asyncio.Event()

    async def other_work() -> None:
        served.set()

    other_writer.acquire()
    try:
        applying = asyncio.create_task(workspace.review.apply_pending(plan_id))
        asyncio.create_task(other_work())  # noqa: RUF006 (awaited through ``served``)
        await asyncio.wait_for(served.wait(), 10)  # the loop ran other work while the apply waited
        assert not applying.done()
    finally:
        other_writer.release()
    result = await asyncio.wait_for(applying, 60)
    assert result.written_uris and not workspace.review.is_waiting(plan_id)
