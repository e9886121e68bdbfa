"""Revalidation's rule: an experience is stale only when its cases do worse than before the drift
by the paired rule of ``compare``, never on one failed trial."""

from __future__ import annotations

from ovtui.train.drift_judgement import before_drift, judge
from ovtui.train.revalidation import Affected, DriftCheck, Setup

CASES = [f"case_{i}" for i in range(8)]


def check() -> DriftCheck:
    setup = Setup(environment="sample", agent="sample")
    affected = Affected(uri="viking://x/refunds.md", name="refunds", record_id="r1", cases=CASES)
    return DriftCheck(dataset="support", split="train", trials=1, setup=setup, affected=[affected])


def test_ledger_outcomes_become_results_and_unclear_ones_are_left_out() -> None:
    fed = [("a", "success"), ("a", "failure"), ("b", "unknown"), ("c", "partial")]
    assert before_drift(fed) == {"a": [1, 0], "c": [0]}


def test_one_failed_trial_is_not_stale_and_cases_that_got_worse_are() -> None:
    before = {"viking://x/refunds.md": {c: [1] for c in CASES}}
    one = {c: [int(c != "case_0")] for c in CASES}
    stale, [judged] = judge(check(), one, {}, before)
    assert stale == [] and not judged.stale and "a verdict needs at least 6" in judged.line
    worse = {c: [0] for c in CASES}
    stale, [judged] = judge(check(), worse, {"case_1": "failed: no refund"}, before)
    assert [s.name for s in stale] == ["refunds"] and judged.stale and judged.cases == 8
    assert stale[0].failing["case_1"] == "failed: no refund" and "worse: stale" in stale[0].paired
    nothing_before: dict[str, dict[str, list[int]]] = {}
    stale, [judged] = judge(check(), worse, {}, nothing_before)
    assert stale == [] and judged.cases == 0  # no outcome from before: nothing to compare with
