"""A run's results case by case: flips first, each with how it ran before and after."""

from __future__ import annotations

from app_support import MakeApp, wait_group
from textual.widgets import Input, OptionList, Static

from ovtui.app.screens.case_results import CaseResultsScreen
from ovtui.app.screens.run import RunScreen
from ovtui.app.views.case_results import case_results, group_counts
from ovtui.train.reports import RunReport, StageReport
from ovtui.wiring.workspace import Workspace


def stage(name: str, results: dict[str, int], evidence: dict[str, str] | None = None) -> StageReport:
    return StageReport(
        stage=name,
        epoch=0,
        cases=len(results),
        passed=sum(results.values()),
        avg_reward=0.0,
        results={case: [passed] for case, passed in results.items()},
        evidence=evidence or {},
    )


def test_flips_come_first_each_with_its_trace_before_and_after() -> None:
    report = RunReport(
        run_id="r",
        command="train",
        backend="offline",
        dataset="d",
        stages=[
            stage(
                "baseline_eval", {"a": 0, "b": 1, "c": 0, "d": 1}, {"a": "failed: x (why)", "b": "passed: y"}
            ),
            stage("final_eval", {"a": 1, "b": 0, "c": 0, "d": 1}, {"a": "passed: x → z", "b": "failed: y"}),
        ],
    )
    rows = case_results(report)
    assert [(r.case, r.group) for r in rows] == [
        ("a", "fail→pass"),
        ("b", "pass→fail"),
        ("c", "still failing"),
        ("d", "still passing"),
    ]
    assert rows[0].evidence() == "a · fail→pass\nbaseline: failed: x (why)\nfinal: passed: x → z"
    assert group_counts(rows) == "fail→pass 1 · pass→fail 1 · still failing 1 · still passing 1"


def test_an_eval_alone_lists_its_failed_cases_first() -> None:
    report = RunReport(
        run_id="r", command="eval", backend="offline", dataset="d", stages=[stage("eval", {"a": 1, "b": 0})]
    )
    rows = case_results(report)
    assert [(r.case, r.group, r.before) for r in rows] == [("b", "failed", None), ("a", "passed", None)]
    assert group_counts(rows) == "failed 1 · passed 1" and rows[1].evidence() == "a · passed\neval: passed"


async def test_f_after_a_run_shows_the_cases_that_flipped_with_their_evidence(
    sample_workspace: Workspace, make_app: MakeApp
) -> None:
    sample_workspace.config.review.policy = "all"
    app = make_app(sample_workspace)
    async with app.run_test(size=(80, 24)) as pilot:
        run = app.screen
        assert isinstance(run, RunScreen)
        run.query_one("#epochs", Input).value = "1"
        await pilot.press("t")
        await wait_group(app, pilot, "run")
        await pilot.pause()
        report = run.last_report
        assert report is not None and report.accuracy_delta is not None and report.accuracy_delta > 0
        await pilot.press("f")
        await pilot.pause()
        cases = app.screen
        assert isinstance(cases, CaseResultsScreen)
        first = cases.rows[0]
        assert first.group == "fail→pass"  # the run improved: what it fixed comes first
        assert str(cases.query_one(OptionList).get_option_at_index(0).prompt).startswith("▶ fail→pass")
        evidence = str(cases.query_one("#case-evidence", Static).render())
        assert f"baseline: {report.stage('baseline_eval').evidence[first.case]}"[:60] in evidence  # type: ignore[union-attr]
        assert "final: passed: " in evidence
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is run
