"""The paired statistics of ``ovtui compare`` and the gate: the delta, its SE, McNemar's exact p,
the paired rule, and a verdict that calls a gain no bigger than the A/A null's movement noise."""

from __future__ import annotations

import pytest

from ovtui.train.paired import NOISE, direction, mcnemar_exact, paired, standard_error, verdict


def test_mcnemar_exact_is_the_two_sided_binomial_of_the_discordant_pairs() -> None:
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)  # 5 to 0: 2 · ½⁵
    assert mcnemar_exact(1, 3) == pytest.approx(2 * (1 + 4) / 16)
    assert mcnemar_exact(4, 4) == 1.0  # capped: a tie is no evidence either way
    assert mcnemar_exact(0, 0) == 1.0


def test_a_paired_result_reads_trials_against_trials() -> None:
    a = {"c1": [0, 0], "c2": [1, 1], "c3": [1, 0], "c4": [0, 0]}
    b = {"c1": [1, 1], "c2": [1, 1], "c3": [1, 1], "c4": [0, 1]}
    result = paired(a, b)
    assert result.cases == 4
    assert result.a_rate == pytest.approx(3 / 8) and result.b_rate == pytest.approx(7 / 8)
    assert result.delta == pytest.approx(0.5)  # per case: +1, 0, +½, +½
    assert result.se == pytest.approx(standard_error([1.0, 0.0, 0.5, 0.5]))
    assert (result.a_only, result.b_only) == (0, 4)
    assert result.p_value == pytest.approx(2 / 16)
    assert result.gained == ["c1", "c3"] and result.lost == []  # by majority; c4 stays failed (1 of 2)
    assert result.ci is not None and result.ci[0] <= result.delta <= result.ci[1]


def test_the_paired_rule_needs_k_standard_errors() -> None:
    assert direction(0.1, 0.1, 2) == "same"
    assert direction(0.1, 0.1, 0.5) == "better"
    assert direction(-0.3, 0.1, 2) == "worse"
    assert direction(0.0, 0.0, 0) == "same"  # no change is never a gain, whatever k


def test_a_gain_no_bigger_than_the_a_a_null_is_noise() -> None:
    cases = [f"c{i:02d}" for i in range(20)]
    a = {c: [int(i < 10)] for i, c in enumerate(cases)}
    b = {c: [int(i < 14)] for i, c in enumerate(cases)}  # four cases gained, none lost
    steady = dict(a)
    restless = {c: [int(6 <= i < 20)] for i, c in enumerate(cases)}  # A again moved by as much
    assert verdict(paired(a, b), paired(a, steady), k=1).startswith("B is better than A")
    assert verdict(paired(a, b), paired(a, restless), k=1) == NOISE
    assert verdict(paired(b, a), paired(a, steady), k=1).startswith("B is worse than A")
    assert verdict(paired(a, b), paired(a, steady), k=3) == NOISE  # Δ 20% < 3·SE
