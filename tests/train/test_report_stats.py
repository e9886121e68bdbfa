"""Report statistics: flips, pass^k (tau2's formula), the delta's interval by the case."""

from __future__ import annotations

from ovtui.train.report_stats import flips, pass_hat_k
from ovtui.train.reports import RunReport, StageReport


def test_flips_follow_each_case() -> None:
    baseline = {"a": [0], "b": [1], "c": [0], "d": [1]}
    final = {"a": [1], "b": [0], "c": [0], "d": [1], "new": [1]}
    assert flips(baseline, final) == (["a"], ["b"])


def test_pass_hat_k_is_the_chance_that_k_trials_all_pass() -> None:
    results = {"x": [1, 1, 0, 1], "y": [0, 0, 0, 0], "z": [1, 1, 1, 1]}
    assert pass_hat_k(results, 1) == (3 / 4 + 0 + 1) / 3
    assert pass_hat_k(results, 2) == (3 / 6 + 0 + 1) / 3  # C(3,2)/C(4,2) for x
    assert pass_hat_k(results, 4) == (0 + 0 + 1) / 3
    assert pass_hat_k(results, 5) is None


def test_summary_prints_flips_interval_pass_k_and_the_floor() -> None:
    first = StageReport(
        stage="baseline_eval", epoch=-1, cases=4, passed=1, avg_reward=0.25,
        results={"a": [0, 0], "b": [1, 1]}, do_nothing_passed=1,
    )  # fmt: skip
    last = StageReport(
        stage="final_eval", epoch=1, cases=4, passed=3, avg_reward=0.75,
        results={"a": [1, 1], "b": [1, 0]}, do_nothing_passed=1,
    )  # fmt: skip
    text = RunReport(
        run_id="r", command="train", backend="offline", dataset="d", stages=[first, last]
    ).summary()
    assert "fail→pass (1): a" in text and "pass→fail (1): b" in text  # 1 of 2 is no majority
    # Per case: a +1, b −½: a t interval over two cases, wide and never zero-width.
    assert "accuracy delta 95% CI (by the case): [" in text and "paired t-test over cases p=" in text
    assert "[final_eval] 2 trials per case: pass^1=75.00%, pass^2=50.00%" in text
    assert "[baseline_eval] do-nothing baseline: 1/2 (50.00%)" in text
