"""Inference by the case: did B do better than A on the cases both ran?

The case is the unit one generalises over; repeated trials are measures within it. Each case gives
one paired difference, B's pass rate over its trials minus A's; the cases where it is not zero are
the *informative* ones. The test and the interval are one family, so they cannot disagree:

* every difference is −1, 0 or +1 (one trial per case, or trials that all agreed): the exact sign
  test (``scipy.stats.binomtest`` on the informative cases; exact McNemar at one trial per case),
  and an interval for Δ from the Clopper–Pearson interval of the share of informative cases that
  went B's way (it excludes 0 exactly when the test's p < α), widened on its far side to the
  unconditional bounds so it is never zero-width and never claims more than n cases can show;
* fractional differences (trials that disagree): the paired t-test of their mean over cases
  (``scipy.stats.t``, as ``ttest_1samp``: t, not z, for small n) and its t interval, which excludes 0 exactly
  when p < α. Trials only make each case's difference more precise; they never count as cases.
  (``bench/stats_calibration.py`` checks this at n = 5–50 and 1–10 trials against simulated nulls.)

The verdict is "better" or "worse" only when p < α, the interval excludes 0 on the same side, and
at least ``MIN_INFORMATIVE`` cases differ (the fewest for which an exact two-sided test can reach
p < .05). Otherwise it is "same", said as not distinguishable from noise, with how many informative
cases a verdict needs and the smallest gain this many cases would detect (80% power). Accuracies
get exact Clopper–Pearson intervals. One implementation serves compare, the validation gate, the
training report, utility and revalidation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy import stats
from scipy.optimize import brentq

Direction = Literal["better", "worse", "same"]
NOISE = "not distinguishable from noise"
ALPHA = 0.05
CONFIDENCE = 1 - ALPHA
MIN_INFORMATIVE = 6  # 2·½⁶ = .031: the fewest cases an exact two-sided sign test can reject at .05 on
POWER = 0.8  # the power a minimum detectable effect is stated at
SIGN_TEST = "exact sign test"
T_TEST = "paired t-test over cases"
NO_TEST = "no test (no case differs)"
DETERMINISTIC = "noise is zero by construction (every trial of every case agreed)"

Results = Mapping[str, list[int]]


def rate(trials: list[int]) -> float:
    return sum(trials) / len(trials) if trials else 0.0


@lru_cache(maxsize=4096)
def accuracy_interval(passed: int, total: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval of ``passed`` of ``total``; (0, 1) for none. Its beta
    quantile form: the same bounds as ``binomtest(...).proportion_ci(method="exact")``, faster."""
    if total <= 0:
        return 0.0, 1.0
    tail = (1 - confidence) / 2
    low = float(stats.beta.ppf(tail, passed, total - passed + 1)) if passed > 0 else 0.0
    high = float(stats.beta.ppf(1 - tail, passed + 1, total - passed)) if passed < total else 1.0
    return low, high


def rate_interval(results: Results) -> tuple[float, float]:
    """A 95% interval of the pass rate by the case (a case's rate is its trials' mean): exact and
    conservative, from the cases that passed every trial (the rate is at least their share) and
    those that passed any (at most theirs); with one trial per case, or trials that agreed, it is
    the Clopper–Pearson interval of the cases passed."""
    runs = [t for t in results.values() if t]
    every, some = sum(all(t) for t in runs), sum(any(t) for t in runs)
    return accuracy_interval(every, len(runs))[0], accuracy_interval(some, len(runs))[1]


def common_cases(a: Results, b: Results) -> list[str]:
    return [c for c in sorted(set(a) & set(b)) if a[c] and b[c]]


def paired_differences(a: Results, b: Results) -> list[float]:
    """B's pass rate minus A's, per case both ran, in name order."""
    return [rate(b[c]) - rate(a[c]) for c in common_cases(a, b)]


def deterministic(*runs: Results) -> bool:
    """Every trial of every case agreed, in every run, and some case had more than one trial."""
    trials = [t for run in runs for t in run.values() if t]
    return any(len(t) > 1 for t in trials) and all(len(set(t)) == 1 for t in trials)


def majority_flips(a: Results, b: Results) -> tuple[list[str], list[str]]:
    """(cases B passes by majority that A fails, the reverse), in name order."""

    def passed(trials: list[int]) -> bool:
        return sum(trials) * 2 > len(trials)

    common = common_cases(a, b)
    gained = [c for c in common if passed(b[c]) and not passed(a[c])]
    lost = [c for c in common if passed(a[c]) and not passed(b[c])]
    return gained, lost


@dataclass(frozen=True)
class Inference:
    """B against A on ``cases`` cases: Δ, its interval, the test's p, and the verdict."""

    cases: int
    delta: float
    se: float  # the per-case differences' spread over √n (0 below two cases): a description only
    ci: tuple[float, float]
    p_value: float
    test: str
    improved: int  # cases whose difference is > 0
    worsened: int
    direction: Direction
    mde: float | None  # the smallest gain these many cases detect with 80% power; None below MIN_INFORMATIVE

    @property
    def informative(self) -> int:
        return self.improved + self.worsened

    def why_not(self) -> str:
        """Why there is no verdict (empty when there is one)."""
        if self.direction != "same":
            return ""
        if self.informative < MIN_INFORMATIVE:
            return (
                f"{self.informative} informative case(s) (cases that differ); a verdict needs at least "
                f"{MIN_INFORMATIVE}"
            )
        return f"p={self.p_value:.3g} ≥ {ALPHA:g} or the 95% interval includes 0"

    def power_text(self) -> str:
        if self.mde is None:
            return (
                f"no power at {self.cases} case(s): fewer than {MIN_INFORMATIVE} can never show a difference"
            )
        return f"minimum detectable effect at {self.cases} case(s): {self.mde:+.1%} (80% power, gains only)"


def _interval_of(low: float, high: float) -> tuple[float, float]:
    return max(-1.0, float(low)), min(1.0, float(high))


def sign_interval(improved: int, worsened: int, cases: int, scale: float = 1.0) -> tuple[float, float]:
    """A 95% interval for Δ from the counts of cases that went each way (each moving by ``scale``).

    Given m informative cases, Δ = (m/n)·scale·(2π − 1), π the chance one goes B's way: its
    Clopper–Pearson interval maps to one for Δ that excludes 0 exactly when the two-sided sign test
    rejects. The side away from 0 is then widened to the unconditional bounds (Δ can be at most the
    upper bound of the share improved, at least minus that of the share worsened), which keeps it
    honest about m being random too and never makes it zero-width."""
    m = improved + worsened
    up = accuracy_interval(improved, cases)[1] * scale
    down = -accuracy_interval(worsened, cases)[1] * scale
    if m == 0:
        return down, up
    low_pi, high_pi = accuracy_interval(improved, m)
    share = m / cases * scale
    low, high = share * (2 * low_pi - 1), share * (2 * high_pi - 1)
    low = low if low > 0 else min(low, down)
    high = high if high < 0 else max(high, up)
    return _interval_of(low, high)


@lru_cache(maxsize=4096)
def sign_test_p(improved: int, worsened: int) -> float:
    """The exact two-sided sign test: under no difference each informative case is a fair coin."""
    return float(stats.binomtest(improved, improved + worsened, 0.5).pvalue)


def _t_test(differences: np.ndarray) -> tuple[float, tuple[float, float]]:
    """The paired t-test of the mean difference over cases (t, not z: n is small) and its t
    interval, which excludes 0 exactly when p < α."""
    n = len(differences)
    mean, se = float(differences.mean()), float(differences.std(ddof=1)) / np.sqrt(n)
    p = 2 * float(stats.t.sf(abs(mean) / se, n - 1))  # = ttest_1samp(differences, 0).pvalue
    half = float(stats.t.ppf(1 - ALPHA / 2, n - 1)) * se
    return min(1.0, p), _interval_of(mean - half, mean + half)


@lru_cache(maxsize=1024)
def minimum_detectable_effect(cases: int, power: float = POWER) -> float | None:
    """The smallest Δ that ``cases`` cases detect with ``power``, for a change that only gains (each
    case gains with chance Δ): the verdict then needs MIN_INFORMATIVE gained cases, which is
    binomial(cases, Δ). None when there are too few cases ever to reach a verdict."""
    if cases < MIN_INFORMATIVE:
        return None

    def shortfall(share: float) -> float:
        return float(stats.binom.sf(MIN_INFORMATIVE - 1, cases, share)) - power

    return float(brentq(shortfall, 1e-9, 1.0))


def decide(delta: float, ci: tuple[float, float], p_value: float, informative: int) -> Direction:
    """The one rule: better or worse only when the test, the interval and the count all say so."""
    if informative < MIN_INFORMATIVE or p_value >= ALPHA:
        return "same"
    if delta > 0 and ci[0] > 0:
        return "better"
    if delta < 0 and ci[1] < 0:
        return "worse"
    return "same"


def infer(differences: list[float]) -> Inference:
    """Inference on per-case paired differences (each in [−1, 1])."""
    d = np.asarray(differences, dtype=float)
    n = len(d)
    improved, worsened = int((d > 0).sum()), int((d < 0).sum())
    delta = float(d.mean()) if n else 0.0
    se = float(d.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0
    informative = d[d != 0]
    if n == 0:
        ci, p, test = (-1.0, 1.0), 1.0, NO_TEST
    elif len(informative) == 0:
        ci, p, test = sign_interval(0, 0, n), 1.0, NO_TEST
    elif bool(np.all(np.abs(informative) == 1.0)):
        p = sign_test_p(improved, worsened)
        ci, test = sign_interval(improved, worsened, n), SIGN_TEST
    elif n < 2 or float(d.std()) == 0.0:  # one case, or every case moved alike: no spread for t
        p = sign_test_p(improved, worsened)
        ci, test = sign_interval(improved, worsened, n, float(np.abs(informative).mean())), SIGN_TEST
    else:
        (p, ci), test = _t_test(d), T_TEST
    way = decide(delta, ci, p, improved + worsened)
    return Inference(n, delta, se, ci, p, test, improved, worsened, way, minimum_detectable_effect(n))


def infer_counts(cases: int, improved: int, worsened: int) -> Inference:
    """Inference on a one-trial comparison told as counts: ``improved`` cases went from fail to
    pass, ``worsened`` from pass to fail, the rest the same (what the validation gate records)."""
    return infer([1.0] * improved + [-1.0] * worsened + [0.0] * max(0, cases - improved - worsened))


@dataclass(frozen=True)
class PairedResult:
    """B against A on the cases both ran: the rates, the inference, and the flips both ways."""

    a_rate: float
    b_rate: float
    inference: Inference
    gained: list[str]  # cases B passes (by majority of trials) that A fails
    lost: list[str]
    deterministic: bool  # every trial of every case agreed under A and under B

    @property
    def cases(self) -> int:
        return self.inference.cases

    @property
    def delta(self) -> float:
        return self.inference.delta


def paired(a: Results, b: Results) -> PairedResult:
    """B against A: the inference on their per-case differences and the flips both ways."""
    common = common_cases(a, b)
    n = len(common)
    gained, lost = majority_flips(a, b)
    return PairedResult(
        a_rate=sum(rate(a[c]) for c in common) / n if n else 0.0,
        b_rate=sum(rate(b[c]) for c in common) / n if n else 0.0,
        inference=infer(paired_differences(a, b)),
        gained=gained,
        lost=lost,
        deterministic=deterministic(*({c: r[c] for c in common} for r in (a, b))),
    )
