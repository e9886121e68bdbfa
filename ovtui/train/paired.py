"""Paired statistics of two policies run on the same cases: is the difference real?

Each case's pass rate (its trials averaged) under A and under B gives one paired difference; the
accuracy delta is their mean, its standard error their spread over √n, its interval a paired
bootstrap over cases (``report_stats.bootstrap_delta``). McNemar's exact test counts the trials
where exactly one policy passed (trial i of A paired with trial i of B: the same case, run the
same way). The one decision rule, shared by ``ovtui compare`` and the validation gate: B is better
when Δ > k·SE and worse when Δ < −k·SE; anything between is no measurable difference. ``compare``
also asks that the delta lie outside what A against itself moved (the A/A null): beside a null
that moves as much, a gain is noise.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb, sqrt
from typing import Literal

from ovtui.train.report_stats import bootstrap_delta, flips

Direction = Literal["better", "worse", "same"]
NOISE = "not distinguishable from noise"


@dataclass(frozen=True)
class PairedResult:
    """B against A on the cases both ran."""

    cases: int
    a_rate: float
    b_rate: float
    delta: float
    se: float
    ci: tuple[float, float] | None  # None: fewer than two cases
    p_value: float  # McNemar's exact, two-sided
    a_only: int  # trials A passed and B failed
    b_only: int
    gained: list[str]  # cases B passes (by majority of trials) that A fails
    lost: list[str]


def rate(trials: list[int]) -> float:
    return sum(trials) / len(trials) if trials else 0.0


def paired_differences(a: dict[str, list[int]], b: dict[str, list[int]]) -> list[float]:
    """B's pass rate minus A's, per case both ran, in name order."""
    return [rate(b[c]) - rate(a[c]) for c in sorted(set(a) & set(b)) if a[c] and b[c]]


def standard_error(differences: list[float]) -> float:
    """The standard error of the mean difference (sample spread over √n; 0 below two cases)."""
    n = len(differences)
    if n < 2:
        return 0.0
    mean = sum(differences) / n
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1)
    return sqrt(variance / n)


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar p: under no difference each discordant pair is a fair coin, so the
    smaller count is binomial(a_only + b_only, ½); 1.0 when no pair is discordant."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail: float = sum(comb(n, i) for i in range(min(a_only, b_only) + 1)) / 2**n
    return min(1.0, 2 * tail)


def discordant(a: dict[str, list[int]], b: dict[str, list[int]]) -> tuple[int, int]:
    """(trials only A passed, trials only B passed), trial i of A paired with trial i of B."""
    a_only = b_only = 0
    for case in set(a) & set(b):
        for x, y in zip(a[case], b[case], strict=False):
            a_only += x > y
            b_only += y > x
    return a_only, b_only


def paired(a: dict[str, list[int]], b: dict[str, list[int]]) -> PairedResult:
    """B against A: the delta, its SE and interval, McNemar's p and the flips both ways."""
    differences = paired_differences(a, b)
    common = [c for c in sorted(set(a) & set(b)) if a[c] and b[c]]
    n = len(common)
    a_only, b_only = discordant(a, b)
    gained, lost = flips(a, b)
    return PairedResult(
        cases=n,
        a_rate=sum(rate(a[c]) for c in common) / n if n else 0.0,
        b_rate=sum(rate(b[c]) for c in common) / n if n else 0.0,
        delta=sum(differences) / n if n else 0.0,
        se=standard_error(differences),
        ci=bootstrap_delta(a, b),
        p_value=mcnemar_exact(a_only, b_only),
        a_only=a_only,
        b_only=b_only,
        gained=gained,
        lost=lost,
    )


def direction(delta: float, se: float, k: float) -> Direction:
    """The paired rule: better when Δ > k·SE, worse when Δ < −k·SE (a zero delta is never either)."""
    if delta > k * se and delta > 0:
        return "better"
    if delta < -k * se and delta < 0:
        return "worse"
    return "same"


def differences_of_flips(cases: int, gained: int, lost: int) -> list[float]:
    """The paired differences of a one-trial comparison told as flips: +1 per case gained, −1 per
    case lost, 0 for the rest (what the validation gate records)."""
    return [1.0] * gained + [-1.0] * lost + [0.0] * max(0, cases - gained - lost)


def beyond_null(ab: PairedResult, aa: PairedResult, k: float) -> Direction:
    """B better or worse than A by the paired rule and beyond the A/A null's interval; else same."""
    way = direction(ab.delta, ab.se, k)
    low, high = aa.ci if aa.ci is not None else (aa.delta, aa.delta)
    floor = max(abs(low), abs(high), abs(aa.delta))
    return way if way != "same" and abs(ab.delta) > floor else "same"


def verdict(ab: PairedResult, aa: PairedResult, k: float) -> str:
    """``beyond_null`` in words; noise when neither."""
    way = beyond_null(ab, aa, k)
    if way == "better":
        return f"B is better than A (Δ {ab.delta:+.1%} > {k:g}·SE and beyond the A/A null)"
    if way == "worse":
        return f"B is worse than A (Δ {ab.delta:+.1%} < −{k:g}·SE and beyond the A/A null)"
    return NOISE
