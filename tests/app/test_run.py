"""Run: a real offline train run with a person reviewing each plan, eval (also of a dataset served by a
real `ovtui env serve sample` on 127.0.0.1), and cancel."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from app_support import MakeApp, notifications, wait_group
from server_support import start_cli_server, stop
from textual.notifications import Notify
from textual.pilot import Pilot
from textual.widgets import Button, Input, Log
from workspace_support import build_sample_workspace, plans_of

from ovtui.app.app import OvtuiApp
from ovtui.app.messages import RunEvents, RunFinished
from ovtui.app.screens.confirm import ConfirmModal
from ovtui.app.screens.review import ReviewScreen
from ovtui.app.screens.run import RunScreen
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.events import Event
from ovtui.train.reports import RunReport
from ovtui.train.review.plans import ItemDecision
from ovtui.wiring.workspace import Workspace


def set_policy(workspace: object, policy: str) -> None:
    workspace.config.review.policy = policy  # type: ignore[attr-defined]


class RunWatch:
    """A ``message_hook`` that wakes the test on kernel events, a plan waiting, or the run's end."""

    def __init__(self) -> None:
        self.messages: list[object] = []
        self.events: list[Event] = []
        self.finished: list[RunFinished] = []
        self.wake = asyncio.Event()

    def __call__(self, message: object) -> None:
        self.messages.append(message)
        if isinstance(message, RunEvents):
            self.events.extend(message.events)
        elif isinstance(message, RunFinished):
            self.finished.append(message)
        elif not isinstance(message, Notify):
            return
        self.wake.set()

    async def next(self, pilot: Pilot[None]) -> None:
        """Wait for the next wake-up; the timeout bounds a hang, it never paces the test."""
        await asyncio.wait_for(self.wake.wait(), timeout=120)
        self.wake.clear()
        await pilot.pause()

    async def event(self, pilot: Pilot[None], test: Callable[[Event], bool]) -> Event:
        while True:
            found = next((e for e in self.events if test(e)), None)
            if found is not None:
                return found
            await self.next(pilot)


async def run_until_idle(app: OvtuiApp, pilot: Pilot[None], watch: RunWatch, *, review: bool) -> int:
    """Drive a run to its RunFinished; when a plan waits, approve all of it and apply it.

    Returns the number of plans reviewed.
    """
    reviewed = 0
    while not watch.finished:
        if not (review and app.pending_count):
            await watch.next(pilot)
            continue
        reviewed += 1
        assert reviewed < 100, "the same plan keeps waiting"
        await pilot.press("2")
        await pilot.pause()
        await pilot.press("A")
        await pilot.pause()
        if isinstance(app.screen, ConfirmModal):
            await pilot.click("#confirm")
            await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        await pilot.press("enter")  # the confirmation of what will be written
        await pilot.pause()
        await wait_group(app, pilot, "apply")
        await pilot.press("1")
        await pilot.pause()
    await pilot.pause()
    return reviewed


async def start_train(
    app: OvtuiApp, pilot: Pilot[None], *, epochs: str, batch: str | None = None
) -> RunScreen:
    """Start a train run from the Run screen with these epochs (and batch size)."""
    run = app.screen
    assert isinstance(run, RunScreen)
    run.query_one("#epochs", Input).value = epochs
    if batch is not None:
        run.query_one("#batch-size", Input).value = batch
    await pilot.press("t")
    return run


async def test_train_to_completion_with_a_person_approving_each_plan(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(sample_workspace)
    watch = RunWatch()
    async with app.run_test(size=(120, 40), message_hook=watch) as pilot:
        run = await start_train(app, pilot, epochs="1", batch="15")
        reviewed = await run_until_idle(app, pilot, watch, review=True)
        await pilot.pause()
        assert reviewed >= 1
        report = run.last_report
        assert isinstance(report, RunReport) and not report.cancelled
        assert report.accuracy_delta is not None and report.accuracy_delta > 0
        assert "train: finished" in str(run.query_one("#run-status").render())
        assert "(+" in str(run.query_one("#accuracy").render())
    applied = [e for e in sample_workspace.reading.history() if e.kind == "apply"]
    assert len(applied) == reviewed
    assert sum(n.startswith("Applied plan") for n in notifications(watch.messages)) == reviewed


async def test_eval_shows_the_accuracy(sample_workspace: Workspace, make_app: MakeApp) -> None:
    app = make_app(sample_workspace)
    watch = RunWatch()
    async with app.run_test(size=(120, 40), message_hook=watch) as pilot:
        run = app.screen
        assert isinstance(run, RunScreen)
        await pilot.press("v")
        await run_until_idle(app, pilot, watch, review=False)
        await pilot.pause()
        assert run.last_report is not None and run.last_report.command == "eval"
        assert "now 0.00% (0/10)" in str(run.query_one("#accuracy").render())  # the validation split


async def test_cancel_between_batches_keeps_the_workspace_consistent(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    set_policy(sample_workspace, "all")
    app = make_app(sample_workspace)
    watch = RunWatch()
    async with app.run_test(size=(120, 40), message_hook=watch) as pilot:
        run = app.screen
        assert isinstance(run, RunScreen)
        run.query_one("#batch-size", Input).value = "2"
        # The run is in another process: enough epochs that it cannot end before the cancel lands.
        run.query_one("#epochs", Input).value = "50"
        await pilot.press("t")
        await watch.event(pilot, lambda e: e.kind == "plan_applied")  # cancel after the first plan
        await pilot.press("c")
        await run_until_idle(app, pilot, watch, review=False)
        await pilot.pause()
        assert run.last_report is not None and run.last_report.cancelled
        assert "train: cancelled" in str(run.query_one("#run-status").render())
    records = sample_workspace.reading.history()
    assert records and all(e.kind == "apply" for e in records)  # every applied plan has its record


async def test_cancel_while_a_plan_waits_for_review_stops_at_once(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(sample_workspace)
    watch = RunWatch()
    async with app.run_test(size=(120, 40), message_hook=watch) as pilot:
        run = app.screen
        assert isinstance(run, RunScreen)
        await pilot.press("t")
        await watch.event(pilot, lambda e: e.kind == "plan_pending")
        assert app.pending_count == 1 and not watch.finished
        await pilot.press("c")
        await run_until_idle(app, pilot, watch, review=False)
        assert not run.running
        assert app.pending_count == 1  # the plan stays for later; nothing was applied
    assert sample_workspace.reading.history() == []
    (parked,) = sample_workspace.review.pending_plans()
    (report_file,) = (sample_workspace.root / "runs").glob("*/report.json")
    report = RunReport.model_validate_json(report_file.read_text(encoding="utf-8"))
    assert report.cancelled and report.pending_plans == [parked.plan_id]  # the report names what waits


async def test_a_run_that_waits_says_so_and_approve_the_rest_applies_every_plan(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(sample_workspace)
    watch = RunWatch()
    async with app.run_test(size=(120, 40), message_hook=watch) as pilot:
        run = await start_train(app, pilot, epochs="1")
        parked = await watch.event(pilot, lambda e: e.kind == "plan_pending")
        await pilot.pause()
        status = str(run.query_one("#run-status").render())
        assert status.startswith(f"train: WAITING FOR YOUR REVIEW — plan {parked.data['plan_id']}")
        assert any("the run waits for you" in n for n in notifications(watch.messages))
        await pilot.press("A")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmModal)
        await pilot.click("#confirm")
        await run_until_idle(app, pilot, watch, review=False)
        await pilot.pause()
        report = run.last_report
        assert report is not None and not report.cancelled and report.failed is None
        assert "train: finished" in str(run.query_one("#run-status").render())
    plans = [e for e in watch.events if e.kind == "plan_pending"]
    assert len(plans) == 1  # the plans after it were approved by the policy the person chose
    applied = [e for e in sample_workspace.reading.history() if e.kind == "apply"]
    assert len(applied) == 4 and sample_workspace.review.pending_plans() == []
    assert any(e.kind == "plan_settled" and e.data["status"] == "applied" for e in watch.events)


@pytest.mark.parametrize("review_built_before", [False, True])
async def test_review_opens_on_the_plan_the_run_waits_on_not_the_oldest(
    sample_workspace: Workspace, make_app: MakeApp, review_built_before: bool
) -> None:
    older = PolicyUpdatePlan(
        items=[PolicyPlanItem(kind="upsert", target_name="left_from_before", after_content="- an old idea")],
        metadata={"plan_id": "older-plan"},
    )
    plans_of(sample_workspace).park(older, [ItemDecision(item=0)])
    app = make_app(sample_workspace)
    watch = RunWatch()
    async with app.run_test(size=(120, 40), message_hook=watch) as pilot:
        if review_built_before:  # showing the older plan already: the new one must replace it
            await pilot.press("2", "1")
        await pilot.press("t")
        parked = await watch.event(pilot, lambda e: e.kind == "plan_pending")
        await pilot.press("2")
        await pilot.pause()
        review = app.screen
        assert isinstance(review, ReviewScreen)
        assert review.plan is not None and review.plan.plan_id == parked.data["plan_id"] != "older-plan"
        await pilot.press("1")
        await pilot.press("c")  # cancelled while its plan waits: both plans stay for later
        await run_until_idle(app, pilot, watch, review=False)
    assert {p.plan_id for p in sample_workspace.review.pending_plans()} >= {
        "older-plan",
        parked.data["plan_id"],
    }


async def test_streaming_trains_on_inbox_files_and_stops_on_cancel(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    from ovtui.core.context import ExecutionContext
    from ovtui.environments.sample.agent import SampleAgentExecutor
    from ovtui.plugins import read_cases

    set_policy(sample_workspace, "all")
    # Stopping waits for the oldest queued gradient's age flush (InboxProcessor.watch drains before the
    # trainer is closed): keep that wait short here.
    sample_workspace.config.trainer.max_wait_seconds = 0.5
    root = sample_workspace.root
    cases, _ = read_cases(root / "datasets" / "support" / "train.jsonl")
    context = ExecutionContext(policy_snapshot_id="test")
    (rollout,) = await SampleAgentExecutor().execute(
        cases[:1], sample_workspace.reading.experiences(), context
    )
    inbox = root / "inbox" / "rollouts"
    app = make_app(sample_workspace, watch_files=True)
    watch = RunWatch()
    async with app.run_test(size=(120, 40), message_hook=watch) as pilot:
        run = app.screen
        assert isinstance(run, RunScreen)
        await pilot.press("s")
        await watch.event(pilot, lambda e: e.kind == "run_started")
        (inbox / ".r1.json.tmp").write_text(rollout.model_dump_json(), encoding="utf-8")
        (inbox / ".r1.json.tmp").rename(inbox / "r1.json")  # appears whole, as a dropped file does
        (inbox / "broken.json").write_text("{}", encoding="utf-8")
        # The kernel has seen both files once it has rejected the broken one.
        rejected = "rejected inbox/rollouts/broken.json"
        await watch.event(pilot, lambda e: rejected in str(e.data.get("message")))
        await pilot.press("c")  # stop: the streaming trainer flushes what it holds (r1), then ends
        await run_until_idle(app, pilot, watch, review=False)
        await pilot.pause()
        log = "\n".join(str(line) for line in run.query_one("#run-log", Log).lines)
    assert run.last_report is not None and run.last_report.command == "stream"
    assert "inbox: trained on r1.json" in log and "rejected inbox/rollouts/broken.json" in log
    assert (root / "inbox" / "rejected" / "broken.json.reason.txt").exists()
    assert [e.kind for e in sample_workspace.reading.history()] == ["apply"]


async def test_eval_on_a_served_dataset_runs_on_the_service(tmp_path: Path, make_app: MakeApp) -> None:
    proc, url = start_cli_server(
        ["env", "serve", "sample", "--port", "0", "--state", str(tmp_path / "state")]
    )
    try:
        root = build_sample_workspace(tmp_path / "ws")
        with (root / "ovtui.toml").open("a", encoding="utf-8") as config:
            config.write(f'\n[datasets.served]\nurl = "{url}"\n')
        app = make_app(Workspace(root))
        watch = RunWatch()
        async with app.run_test(size=(120, 40), message_hook=watch) as pilot:
            run = app.screen
            assert isinstance(run, RunScreen)
            run.query_one("#dataset", Input).value = "served"
            await pilot.press("v")
            await run_until_idle(app, pilot, watch, review=False)
            await pilot.pause()
            report = run.last_report
            assert report is not None and report.command == "eval" and report.dataset == "served"
            assert report.errors == [] and report.services == {url: 10}  # every case ran on the service
            # the same accuracy as the local eval (test_eval_shows_the_accuracy)
            assert "now 0.00% (0/10)" in str(run.query_one("#accuracy").render())
            assert "eval: finished" in str(run.query_one("#run-status").render())
    finally:
        stop(proc)


async def test_a_failed_run_shows_as_failed(workspace: Workspace, make_app: MakeApp) -> None:
    """After `run failed: DatasetError …` the status line says FAILED, never `finished`."""
    app = make_app(workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        app.screen.query_one("#dataset", Input).value = "no_such_dataset"
        await pilot.press("t")
        await app.workers.wait_for_complete()
        await pilot.pause()
        (finished,) = {id(m): m for m in messages if isinstance(m, RunFinished)}.values()
        assert finished.report is None and finished.error
        status = str(app.screen.query_one("#run-status").render())
        assert status.startswith("train: FAILED") and "finished" not in status
        assert app.screen.query_one("#cancel", Button).disabled  # the run is over
