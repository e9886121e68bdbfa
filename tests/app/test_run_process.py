"""A run in a worker process: events stream to the app, a dying worker is reported, never waited on."""

from __future__ import annotations

import os
import signal

import pytest
from app_support import MakeApp, notifications, wait_group
from textual.widgets import Input, Log

from ovtui.app.run_process import RunProcess, RunWorkerError
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
    process = RunProcess("train", sample_workspace, TrainOptions(dataset="missing"), lambda _: None)
    with pytest.raises(RunWorkerError, match="missing"):
        await process.run()


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
        assert "run failed: RunWorkerError" in log
