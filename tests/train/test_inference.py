"""Inference by the case (``ovtui.train.inference``): the case is the unit, trials are measures
within it; exact tests and intervals; no verdict on too few informative cases; the verdict, p and
the interval never contradict each other."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ovtui.train.comparison import comparison
from ovtui.train.inference import (
    ALPHA,
    DETERMINISTIC,
    MIN_INFORMATIVE,
    NOISE,
    SIGN_TEST,
    T_TEST,
    accuracy_interval,
    infer,
    infer_counts,
    minimum_detectable_effect,
    paired,
    rate_interval,
)


def outcomes(passes: list[int], trials: int) -> dict[str, list[int]]:
    return {f"c{i:02d}": [p] * trials for i, p in enumerate(passes)}


def test_more_trials_of_a_deterministic_pair_leave_p_as_it_was() -> None:
    a_passes = [0] * 8 + [1] * 7
    b_passes = [1] * 5 + [0] * 3 + [1] * 6 + [0]  # five gained, one lost
    one = paired(outcomes(a_passes, 1), outcomes(b_passes, 1)).inference
    five = paired(outcomes(a_passes, 5), outcomes(b_passes, 5)).inference
    assert one.test == five.test == SIGN_TEST
    assert five.p_value == one.p_value == pytest.approx(stats.binomtest(5, 6).pvalue)
    assert five.ci == one.ci and five.direction == one.direction


def test_the_order_of_trials_within_a_case_does_not_change_p() -> None:
    rng = random.Random(3)
    a = {f"c{i}": [rng.random() < 0.5 for _ in range(5)] for i in range(20)}
    b = {c: [rng.random() < 0.7 for _ in range(5)] for c in a}
    a_int = {c: [int(x) for x in t] for c, t in a.items()}
    b_int = {c: [int(x) for x in t] for c, t in b.items()}
    shuffled = {c: rng.sample(t, len(t)) for c, t in b_int.items()}
    before, after = paired(a_int, b_int).inference, paired(a_int, shuffled).inference
    assert before.test == T_TEST
    assert after.p_value == before.p_value and after.ci == before.ci


@pytest.mark.parametrize("cases", [1, 2])
def test_one_or_two_cases_never_give_a_verdict(cases: int) -> None:
    for trials in (1, 5):
        result = paired(outcomes([0] * cases, trials), outcomes([1] * cases, trials))
        assert result.delta == 1.0 and result.inference.direction == "same"
        low, high = result.inference.ci
        assert high - low > 0.8  # one or two cases bound Δ hardly at all
        assert f"a verdict needs at least {MIN_INFORMATIVE}" in result.inference.why_not()


def test_four_gained_of_fifteen_is_no_verdict_beside_its_p() -> None:
    found = infer_counts(15, 4, 0)
    assert found.p_value == pytest.approx(0.125) and found.direction == "same"
    assert found.ci[0] < 0 < found.ci[1]


def test_intervals_are_exact_and_never_zero_width() -> None:
    assert accuracy_interval(0, 15) == pytest.approx((0.0, 0.218019), abs=1e-6)
    assert accuracy_interval(15, 15) == pytest.approx((0.781981, 1.0), abs=1e-6)
    exact = stats.binomtest(7, 15).proportion_ci(method="exact")
    assert accuracy_interval(7, 15) == pytest.approx((exact.low, exact.high))
    every = infer_counts(15, 15, 0)  # all +1: once [+100%, +100%]
    assert every.ci[1] == 1.0 and every.ci[0] == pytest.approx(2 * 0.781981 - 1, abs=1e-6)
    none = infer_counts(15, 0, 0)  # nothing differs: Δ is bounded by the share that might have
    assert none.ci == pytest.approx((-0.218019, 0.218019), abs=1e-6) and none.p_value == 1.0
    assert rate_interval({"a": [1, 1], "b": [1, 0], "c": [0, 0]}) == (
        accuracy_interval(1, 3)[0],
        accuracy_interval(2, 3)[1],
    )


def test_the_minimum_detectable_effect_is_where_the_verdict_has_its_power() -> None:
    assert minimum_detectable_effect(5) is None
    mde = minimum_detectable_effect(30)
    assert mde is not None
    assert stats.binom.sf(MIN_INFORMATIVE - 1, 30, mde) == pytest.approx(0.8)


def test_a_deterministic_comparison_says_its_noise_is_zero_by_construction() -> None:
    a, b = outcomes([0] * 10 + [1] * 10, 3), outcomes([1] * 10 + [1] * 10, 3)
    result = comparison(("A", "B"), "validation", 3, (a, b, dict(a)), ({}, {}))
    assert result.noise == DETERMINISTIC and result.to_json()["deterministic"] is True
    assert DETERMINISTIC in result.lines() and not any(line.startswith("A/A") for line in result.lines())
    assert result.verdict.startswith("B is better than A")
    flat = comparison(("A", "B"), "validation", 1, (outcomes([0, 1], 1), outcomes([1, 1], 1), {}), ({}, {}))
    assert flat.verdict.startswith(NOISE) and "a verdict needs at least 6" in flat.verdict


def test_an_unstable_a_a_null_withholds_the_verdict() -> None:
    a = outcomes([0] * 10 + [1] * 10, 1)
    b = outcomes([1] * 20, 1)
    again = outcomes([1] * 10 + [0] * 10, 1)  # A against itself moved ten cases each way
    moved = outcomes([1] * 20, 1)  # A again gained ten cases: A against itself "differs"
    assert comparison(("A", "B"), "v", 1, (a, b, again), ({}, {})).verdict.startswith("B is better")
    assert "unstable" in comparison(("A", "B"), "v", 1, (a, b, moved), ({}, {})).verdict


differences = st.lists(
    st.sampled_from([-1.0, -0.8, -0.5, -0.2, 0.0, 0.0, 0.0, 0.2, 0.5, 1.0, 1.0, -1.0]),
    min_size=0,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(differences)
def test_the_verdict_agrees_with_p_and_the_interval(values: list[float]) -> None:
    found = infer(values)
    low, high = found.ci
    assert -1.0 <= low <= found.delta <= high <= 1.0 and high > low  # never zero-width
    assert 0.0 <= found.p_value <= 1.0
    if found.direction == "better":
        assert found.p_value < ALPHA and low > 0 and found.informative >= MIN_INFORMATIVE
    elif found.direction == "worse":
        assert found.p_value < ALPHA and high < 0 and found.informative >= MIN_INFORMATIVE
    else:
        assert found.why_not()
    # The test and its interval are one family: the interval excludes 0 exactly when p < α.
    if found.informative:
        assert (found.p_value < ALPHA) == (low > 0 or high < 0)
