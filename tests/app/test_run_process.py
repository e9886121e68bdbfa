"""A run in a worker process: events stream to the app, a dying worker is reported, never waited on."""

from __future__ import annotations

import os
import signal

import pytest
from app_support import MakeApp, notifications, wait_group
from textual.widgets import Input, Log

from ovtui.app.run_process import RunFailed, RunProcess, RunWorkerError
from ovtui.app.screens.run import RunScreen
from ovtui.core.events import Event
from ovtui.wiring.workspace import TrainOptions, Workspace


async def test_a_run_streams_its_events_and_ends_with_its_report(sample_workspace: Workspace) -> None:
    events: list[Event] = []
    process = RunProcess("eval", sample_workspace, TrainOptions(), events.append)
    report = await process.run()
    assert report.command == "eval" and not report.cancelled
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert events[0].data["run_id"] == report.run_id
    assert process.pid != os.getpid()  # the kernel ran in another process


async def test_a_worker_that_fails_reports_the_kernel_error(sample_workspace: Workspace) -> None:
    """The kernel's own message, as the CLI prints it: no exception class, no "ended without a report"."""
    events: list[Event] = []
    process = RunProcess("train", sample_workspace, TrainOptions(dataset="missing"), events.append)
    with pytest.raises(RunFailed) as failed:
        await process.run()
    assert str(failed.value) == (
        "datasets/missing/train.jsonl: dataset split not found; "
        "the datasets here: support (test, train, validation)"
    )
    (finished,) = [e for e in events if e.kind == "run_finished"]
    assert finished.data["failed"] == str(failed.value)
    assert finished.data["report"]["errors"] == [str(failed.value)]


async def test_a_killed_worker_is_reported_with_its_exit_code(sample_workspace: Workspace) -> None:
    def kill_on_start(event: Event) -> None:
        if event.kind == "run_started":
            assert process.pid is not None
            os.kill(process.pid, signal.SIGKILL)

    process = RunProcess("train", sample_workspace, TrainOptions(epochs=1), kill_on_start)
    with pytest.raises(RunWorkerError, match="exit code -9"):
        await process.run()


async def test_the_app_reports_a_failed_run_and_is_ready_for_the_next(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(sample_workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        run = app.screen
        assert isinstance(run, RunScreen)
        run.query_one("#dataset", Input).value = "missing"
        await pilot.press("t")
        await wait_group(app, pilot, "run")
        assert not run.running
        assert any("train run failed" in n and "missing" in n for n in notifications(messages))
        log = "\n".join(str(line) for line in run.query_one("#run-log", Log).lines)
        assert log.count("run failed: datasets/missing/train.jsonl: dataset split not found") == 1
        assert "run finished" not in log


async def test_a_failed_runs_reason_is_on_the_screen_whole_at_80_columns(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    """At the floor a long reason wraps, in the status and in the log; no part of it is cut at the edge."""
    app = make_app(sample_workspace)
    dataset = "a_long_dataset_name_for_the_floor"
    reason = (
        f"datasets/{dataset}/train.jsonl: dataset split not found; "
        "the datasets here: support (test, train, validation)"
    )
    async with app.run_test(size=(80, 24)) as pilot:
        run = app.screen
        assert isinstance(run, RunScreen)
        run.query_one("#dataset", Input).value = dataset
        await pilot.press("t")
        await wait_group(app, pilot, "run")
        await pilot.pause()
        status = run.query_one("#run-status")
        assert " ".join(str(status.render()).split()) == f"train: FAILED — {reason}"
        assert status.size.height >= 2  # wrapped over lines, not cut at 80 columns
        log = run.query_one("#run-log", Log)
        lines = [str(line) for line in log.lines]
        assert all(len(line) <= log.content_region.width for line in lines)
        assert f"run failed: {reason}" in " ".join(" ".join(lines).split())
