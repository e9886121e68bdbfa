"""Run: a real offline train run with a person reviewing each plan, eval, and cancel."""

from __future__ import annotations

from app_support import notifications, wait_group

from ovtui.app.screens.confirm import ConfirmModal
from ovtui.app.screens.run import RunScreen
from ovtui.reports import RunReport
from ovtui.workspace.history import HistoryStore


def set_policy(workspace: object, policy: str) -> None:
    workspace.config.review.policy = policy  # type: ignore[attr-defined]


async def run_until_idle(app, pilot, run: RunScreen, *, review: bool, limit: int = 2000) -> int:
    """Drive a run to its end; when a plan waits, approve all of it and apply it. Returns plans reviewed."""
    reviewed = 0
    for _ in range(limit):
        if not run.running:
            return reviewed
        await pilot.pause(0.02)
        if review and app.pending_count:
            reviewed += 1
            await pilot.press("2")
            await pilot.pause()
            await pilot.press("A")
            await pilot.pause()
            if isinstance(app.screen, ConfirmModal):
                await pilot.click("#confirm")
                await pilot.pause()
            await pilot.press("p")
            await pilot.pause()
            await wait_group(app, pilot, "apply")
            await pilot.press("1")
            await pilot.pause()
    raise AssertionError("the run did not finish")


async def test_train_to_completion_with_a_person_approving_each_plan(sample_workspace, make_app):
    app = make_app(sample_workspace)
    messages: list[object] = []
    async with app.run_test(size=(120, 40), message_hook=messages.append) as pilot:
        run = app.screen
        run.query_one("#epochs").value = "1"
        run.query_one("#batch-size").value = "15"
        await pilot.press("t")
        reviewed = await run_until_idle(app, pilot, run, review=True)
        await pilot.pause()
        assert reviewed >= 1
        report = run.last_report
        assert isinstance(report, RunReport) and not report.cancelled
        assert report.accuracy_delta is not None and report.accuracy_delta > 0
        assert "train: finished" in str(run.query_one("#run-status").render())
        assert "(+" in str(run.query_one("#accuracy").render())
    applied = [e for e in HistoryStore(sample_workspace.paths).list() if e.kind == "apply"]
    assert len(applied) == reviewed
    assert sum(n.startswith("Applied plan") for n in notifications(messages)) == reviewed


async def test_eval_shows_the_accuracy(sample_workspace, make_app):
    app = make_app(sample_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        run = app.screen
        await pilot.press("v")
        await run_until_idle(app, pilot, run, review=False)
        await pilot.pause()
        assert run.last_report is not None and run.last_report.command == "eval"
        assert "now 0.00% (0/15)" in str(run.query_one("#accuracy").render())


async def test_cancel_between_batches_keeps_the_workspace_consistent(sample_workspace, make_app):
    set_policy(sample_workspace, "all")
    app = make_app(sample_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        run = app.screen
        run.query_one("#batch-size").value = "2"
        await pilot.press("t")
        for _ in range(500):  # cancel as soon as the first plan was applied
            await pilot.pause(0.01)
            if run.progress.counts["plans"]:
                break
        await pilot.press("c")
        await run_until_idle(app, pilot, run, review=False)
        await pilot.pause()
        assert run.last_report is not None and run.last_report.cancelled
        assert "train: cancelled" in str(run.query_one("#run-status").render())
    records = HistoryStore(sample_workspace.paths).list()
    assert records and all(e.kind == "apply" for e in records)  # every applied plan has its record


async def test_cancel_while_a_plan_waits_for_review_stops_at_once(sample_workspace, make_app):
    app = make_app(sample_workspace)
    async with app.run_test(size=(120, 40)) as pilot:
        run = app.screen
        await pilot.press("t")
        for _ in range(2000):
            await pilot.pause(0.01)
            if app.pending_count:
                break
        await pilot.press("c")
        await run_until_idle(app, pilot, run, review=False)
        assert not run.running
        assert app.pending_count == 1  # the plan stays for later; nothing was applied
    assert HistoryStore(sample_workspace.paths).list() == []


async def test_streaming_trains_on_inbox_files_and_stops_on_cancel(sample_workspace, make_app):
    from ovtui.components.case_loader import read_cases
    from ovtui.context import ExecutionContext
    from ovtui.sample_env.agent import SampleAgentExecutor

    set_policy(sample_workspace, "all")
    # Stopping waits for the oldest queued gradient's age flush (InboxProcessor.watch drains before the
    # trainer is closed): keep that wait short here.
    sample_workspace.config.trainer.max_wait_seconds = 0.5
    root = sample_workspace.root
    cases, _ = read_cases(root / "datasets" / "support" / "train.jsonl")
    context = ExecutionContext(policy_snapshot_id="test")
    (rollout,) = await SampleAgentExecutor().execute(cases[:1], sample_workspace.experiences(), context)
    inbox = root / "inbox" / "rollouts"
    app = make_app(sample_workspace, watch_files=True)
    async with app.run_test(size=(120, 40)) as pilot:
        run = app.screen
        await pilot.press("s")
        for _ in range(500):
            await pilot.pause(0.01)
            if run.progress.run_id:
                break
        (inbox / ".r1.json.tmp").write_text(rollout.model_dump_json(), encoding="utf-8")
        (inbox / ".r1.json.tmp").rename(inbox / "r1.json")  # appears whole, as a dropped file does
        (inbox / "broken.json").write_text("{}", encoding="utf-8")
        for _ in range(500):  # the kernel has seen both files once it has rejected the broken one
            await pilot.pause(0.02)
            if (root / "inbox" / "rejected" / "broken.json").exists():
                break
        await pilot.press("c")  # stop: the streaming trainer flushes what it holds (r1), then ends
        await run_until_idle(app, pilot, run, review=False)
        await pilot.pause()
        log = "\n".join(str(line) for line in run.query_one("#run-log").lines)
    assert run.last_report is not None and run.last_report.command == "stream"
    assert "inbox: trained on r1.json" in log and "rejected inbox/rollouts/broken.json" in log
    assert (root / "inbox" / "rejected" / "broken.json.reason.txt").exists()
    assert [e.kind for e in HistoryStore(sample_workspace.paths).list()] == ["apply"]
