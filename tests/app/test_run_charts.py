"""The Run screen's pictures (the learning curve, the flips map, tokens and cost per stage) and its
loose ends: a true line before the run's size is known, "connecting" while a service is retried,
the log pinned to its newest line through a resize, and the empty state before the first run."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from app_support import MakeApp, SnapCompare, make_workspace, screen_text, settle, widget_text
from server_support import closed_port_url
from textual.pilot import Pilot
from textual.widgets import Input
from workspace_support import build_sample_workspace

from ovtui.app.app import OvtuiApp
from ovtui.app.messages import RunFinished
from ovtui.app.screens.run import EMPTY_RUN, RunScreen
from ovtui.app.views.run import RunProgress
from ovtui.app.views.run_charts import CI_HIGH, CI_LOW, FLOOR, TEST, TRAIN
from ovtui.app.widgets.charts import LearningCurvePlot, StageCostPlot
from ovtui.app.widgets.pinned_log import PinnedLog
from ovtui.core.events import Event
from ovtui.train.components.remote_transport import SERVICE_ATTEMPTS, RemoteError
from ovtui.train.html_charts import learning_curve as html_curve
from ovtui.train.reports import RunReport, StageReport
from ovtui.wiring.workspace import Workspace

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC).timestamp()
CASES = ["cancel_refundable", "change_address", "lost_bag", "seat_upgrade"]


def stage(name: str, epoch: int, passing: set[str], do_nothing: int | None = None) -> StageReport:
    results = {case: [int(case in passing)] for case in CASES}
    passed = len(passing)
    return StageReport(
        stage=name,
        epoch=epoch,
        cases=len(CASES),
        passed=passed,
        avg_reward=passed / len(CASES),
        results=results,
        do_nothing_passed=do_nothing,
    )


STAGES = [
    stage("baseline_eval", -1, {"lost_bag"}, do_nothing=1),
    stage("train_epoch", 0, {"lost_bag", "seat_upgrade"}),
    stage("train_epoch", 1, {"seat_upgrade", "change_address"}),
    stage("final_eval", 1, {"lost_bag", "seat_upgrade", "change_address"}),
]
USAGE = [("extract", 1200, 300, 0.01), ("propose", 700, 400, 0.02), ("extract", 100, 0, 0.005)]


def run_events() -> list[Event]:
    events = [Event("run_started", {"command": "train", "dataset": "support", "epochs": 2}, AT)]
    for i, s in enumerate(STAGES):
        events.append(Event("eval", {**s.model_dump(), "accuracy": s.accuracy}, AT + i + 1))
    for name, prompt, completion, cost in USAGE:
        data = {"stage": name, "prompt_tokens": prompt, "completion_tokens": completion, "cost": cost}
        events.append(Event("usage", data, AT + 6))
    return events


@pytest.fixture
def app(tmp_path: Path) -> OvtuiApp:
    return OvtuiApp(make_workspace(tmp_path / "ws"), watch_files=False)


async def fed(app: OvtuiApp, pilot: Pilot[None], events: list[Event]) -> RunScreen:
    for event in events:
        app.pump(event)
    await settle(app, pilot)
    assert isinstance(app.screen, RunScreen)
    return app.screen


def html_points(report: RunReport) -> dict[str, list[float]]:
    """The accuracies the HTML report plots, per series, read back from its SVG marks."""
    found: dict[str, list[float]] = {"eval": [], "train": []}
    for series, value in re.findall(r'data-series="(\w+)"[^>]*data-accuracy="([\d.]+)"', html_curve(report)):
        found[series].append(round(float(value) * 100, 4))
    return found


async def test_the_curve_plots_what_the_run_reported_as_the_html_report_does(app: OvtuiApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await fed(app, pilot, run_events())
        await pilot.press("g")
        await settle(app, pilot)
        curve = app.screen.query_one(LearningCurvePlot)
        assert curve.display and curve.region.height >= 12  # it has the room at the floor
        series = curve.series
        assert series[TEST] == ([0, 3], [25.0, 75.0]) and series[TRAIN] == ([1, 2], [50.0, 50.0])
        report = RunReport(run_id="r", command="train", backend="offline", dataset="d", stages=STAGES)
        assert html_points(report) == {"eval": series[TEST][1], "train": series[TRAIN][1]}
        assert series[FLOOR] == ([0, 3], [25.0, 25.0])  # 1 of 4 cases passes doing nothing
        low, high = series[CI_LOW][1], series[CI_HIGH][1]
        assert all(lo <= acc <= hi for lo, acc, hi in zip(low, series[TEST][1], high, strict=True))
        text = widget_text(app, curve)
        for label in ("base", "t0", "t1", "final", "evaluations", "training", "do-nothing"):
            assert label in text


async def test_the_flips_map_marks_each_flip_with_an_arrow_both_ways(app: OvtuiApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await fed(app, pilot, run_events())
        await pilot.press("g", "g")
        await settle(app, pilot)
        text = widget_text(app, app.screen.query_one("#flips-map"))
        # lost_bag: passed, passed, lost at epoch 1, gained back in the final eval.
        assert re.search(r"lost_bag\s+✓\s+✓\s+✗↓\s+✓↑", text), text
        assert re.search(r"cancel_refundable\s+✗\s+✗\s+✗\s+✗(\s|$)", text), text
        assert "4 flip(s)" in text


async def test_tokens_and_cost_per_stage_add_up_each_call(app: OvtuiApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await fed(app, pilot, run_events())
        await pilot.press("g", "g", "g")
        await settle(app, pilot)
        assert app.screen.query_one(StageCostPlot).bars == {"extract": 1600, "propose": 1100}
        text = screen_text(app)
        assert "cost $0.0350" in text and "extract $0.0150" in text
        await pilot.press("g")  # round again to the log, with the stage rows back
        await settle(app, pilot)
        assert app.screen.query_one(PinnedLog).display and app.screen.query_one("#run-stages").display


async def test_the_charts_say_how_to_fill_them_before_any_run(app: OvtuiApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert " ".join(EMPTY_RUN.split()) in " ".join(screen_text(app).split())
        await pilot.press("g")
        await settle(app, pilot)
        assert "No evaluation yet" in screen_text(app)
        assert not app.screen.query_one(LearningCurvePlot).display


async def test_the_empty_state_goes_when_a_run_starts(app: OvtuiApp) -> None:
    async with app.run_test(size=(80, 24)) as pilot:
        await fed(app, pilot, run_events()[:1])
        assert "No run yet" not in screen_text(app)


async def test_a_real_runs_curve_is_its_saved_reports(sample_workspace: Workspace, make_app: MakeApp) -> None:
    """A train run in its worker process, every plan applied: the curve plots the report it saved."""
    sample_workspace.config.review.policy = "all"
    app = make_app(sample_workspace)
    finished = asyncio.Event()

    def hook(message: object) -> None:
        if isinstance(message, RunFinished):
            finished.set()

    async with app.run_test(size=(80, 24), message_hook=hook) as pilot:
        await settle(app, pilot)
        app.screen.query_one("#epochs", Input).value = "1"
        app.screen.query_one("#batch-size", Input).value = "15"
        await pilot.press("t")
        await asyncio.wait_for(finished.wait(), timeout=120)  # bounds a hang, never paces the test
        await pilot.press("g")
        await settle(app, pilot)
        report = sample_workspace.reading.run_report()
        stages = [s.stage for s in report.stages]
        assert stages == ["baseline_eval", "train_epoch", "final_eval"]
        series = app.screen.query_one(LearningCurvePlot).series
        assert series[TEST] == ([0, 2], [round(report.stages[i].accuracy * 100, 4) for i in (0, 2)])
        assert series[TRAIN] == ([1], [round(report.stages[1].accuracy * 100, 4)])


def test_the_run_charts_at_the_floor(app: OvtuiApp, snap_compare: SnapCompare) -> None:
    async def show_curve(pilot: Pilot[None]) -> None:
        await fed(app, pilot, run_events())
        await pilot.press("g")
        await settle(app, pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=show_curve)


def test_a_finished_runs_tokens_count_each_call_once() -> None:
    """A report's usage has each stage and their sum (``total``): the screen adds the stages only."""
    progress = RunProgress(command="train")
    usage = {
        "extract": {"prompt_tokens": 1000, "completion_tokens": 200, "cost": 0.01},
        "propose": {"prompt_tokens": 500, "completion_tokens": 100, "cost": 0.02},
        "total": {"prompt_tokens": 1500, "completion_tokens": 300, "cost": 0.03},
    }
    report = {"run_id": "r", "command": "train", "backend": "b", "dataset": "d", "usage": usage}
    progress.apply(Event("run_finished", {"report": report}))
    assert progress.usage == {"prompt_tokens": 1500, "completion_tokens": 300, "cost": 0.03}
    assert list(progress.stage_usage) == ["extract", "propose"]


# --- the loose ends ---------------------------------------------------------------------------------


def test_before_the_runs_size_is_known_the_rows_count_without_a_made_up_total() -> None:
    progress = RunProgress(command="train")
    progress.apply(Event("run_started", {"command": "train", "epochs": 2}))
    progress.apply(Event("progress", {"stage": "baseline_eval", "done": 3, "total": 15}))
    rows = {name: text for name, _, _, text in progress.stage_rows()}
    assert rows["trajectories"] == "0 trajectories · no total yet"
    assert rows["plans"] == "0 plans · no total yet"
    assert "?" not in " ".join(rows.values())


def test_an_eval_says_it_does_not_train_instead_of_counting_against_no_total() -> None:
    progress = RunProgress(command="eval")
    progress.apply(Event("progress", {"stage": "eval", "done": 2, "total": 15}))
    rows = progress.stage_rows()
    assert rows[0][1:] == (2, 15, "2/15 eval")
    assert [text for *_, text in rows[1:]] == ["none: an eval does not train"] * 3


def test_a_run_retrying_its_service_says_it_is_connecting_with_the_try() -> None:
    progress = RunProgress(command="train")
    progress.apply(Event("run_started", {"command": "train"}))
    assert progress.stage_rows()[0][3] == "waiting for the first cases"  # not "0/0"
    retry = {"url": "http://127.0.0.1:9", "attempt": 3, "attempts": 8, "reason": "ConnectError"}
    progress.apply(Event("log", {"message": "…", "level": "warning", "retry": retry}))
    assert progress.status_line() == (
        "train: connecting — http://127.0.0.1:9: try 3 of 8 failed (ConnectError), trying again"
    )
    assert progress.stage_rows()[0][1:] == (0, None, "connecting…")
    progress.apply(Event("progress", {"stage": "baseline_eval", "done": 0, "total": 15}))
    assert progress.status_line() == "train: running — baseline eval"


async def long_log(app: OvtuiApp, pilot: Pilot[None]) -> PinnedLog:
    """The Run screen's log, a run started and 60 lines in it: more than it shows at any size here."""
    await fed(app, pilot, run_events()[:1])
    log = app.screen.query_one(PinnedLog)
    log.write_lines([f"line {n}" for n in range(60)])
    await settle(app, pilot)
    return log


async def test_the_log_stays_on_its_newest_line_through_a_resize(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(130, 36)) as pilot:
        log = await long_log(app, pilot)
        assert log.is_vertical_scroll_end
        await pilot.resize_terminal(80, 24)
        await settle(app, pilot)
        assert log.max_scroll_y > 0 and log.is_vertical_scroll_end
        log.write_line("the newest line")
        await settle(app, pilot)
        assert "the newest line" in widget_text(app, log)


async def test_a_log_scrolled_up_stays_where_the_reader_left_it(
    workspace: Workspace, make_app: MakeApp
) -> None:
    app = make_app(workspace)
    async with app.run_test(size=(130, 36)) as pilot:
        log = await long_log(app, pilot)
        log.scroll_to(y=5, animate=False, immediate=True)
        await settle(app, pilot)
        await pilot.resize_terminal(80, 24)
        await settle(app, pilot)
        assert log.scroll_offset.y == 5 and not log.pinned


async def test_a_run_on_a_service_that_is_down_says_it_is_connecting(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    with (root / "ovtui.toml").open("a", encoding="utf-8") as config:
        # retry_delay: the seven waits between its eight tries take ms, not the 5 s of the default
        down = f'url = "{closed_port_url()}"\nrequest_timeout = 1\nretry_delay = 0.001\n'
        config.write(f"\n[datasets.down]\n{down}")
    events: list[Event] = []
    with pytest.raises(RemoteError):
        await Workspace(root).runs.evaluate("down", listeners=[events.append])
    retries = [e.data["retry"] for e in events if e.kind == "log" and "retry" in e.data]
    assert [r["attempt"] for r in retries] == list(range(1, SERVICE_ATTEMPTS))
    progress = RunProgress(command="eval")
    for event in events:
        if event.kind != "run_finished":
            progress.apply(event)
    assert f"try {SERVICE_ATTEMPTS - 1} of {SERVICE_ATTEMPTS} failed" in progress.status_line()
    for event in events:  # then its end: the rows stop saying "connecting…" under FAILED
        if event.kind == "run_finished":
            progress.apply(event)
    assert progress.status_line().startswith("eval: FAILED")
    assert progress.stage_rows()[0][3] == "failed before its first cases"


LONG_CASES = [f"booking_cancellation_test_{i:03}" for i in range(9)]


def long_named_stage(name: str, epoch: int) -> StageReport:
    results = {case: [1] for case in LONG_CASES}
    n = len(LONG_CASES)
    return StageReport(stage=name, epoch=epoch, cases=n, passed=n, avg_reward=1.0, results=results)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_flips_map_names_cases_whole_and_the_legend_leaves_points_at_100(
    app: OvtuiApp, size: tuple[int, int]
) -> None:
    stages = [long_named_stage("baseline_eval", -1), long_named_stage("final_eval", 0)]
    events = [Event("run_started", {"command": "evaluate", "dataset": "support"}, AT)]
    events += [Event("eval", {**s.model_dump(), "accuracy": s.accuracy}, AT + 1) for s in stages]
    async with app.run_test(size=size) as pilot:
        await fed(app, pilot, events)
        await pilot.press("g")
        await settle(app, pilot)
        curve = app.screen.query_one(LearningCurvePlot)
        rows = screen_text(app).splitlines()[curve.region.y : curve.region.bottom]
        top = next(row for row in rows if re.match(r"\s*100(\.0)?\s*┤", row))  # the 100% row
        assert top.count("o") >= 2, "\n".join(rows)  # both evaluations' points, none under a legend
        assert "o evaluations" in rows[0] and ": do-nothing" in rows[0]  # the title is the legend
        await pilot.press("g")
        await settle(app, pilot)
        text = screen_text(app)
        for case in LONG_CASES:  # nine names that differ only at their end, each whole
            assert re.search(rf"{case}\s+✓\s+✓", text), text
