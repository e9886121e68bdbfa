"""Calibration of the product's inference (``ovtui.train.inference.paired``, what ``compare``, the
gate, utility and revalidation call) on simulated comparisons.

Each case has its own pass chance under A, drawn from U(0.25, 0.75). Under the **null**, B moves
each case by ±20 pp at random (B differs per case, the mean effect is zero); under an **effect**, B
adds Δ = 10 or 20 pp to every case. Every case runs ``trials`` times under each policy. For n ∈ {5,
15, 50} cases × trials ∈ {1, 5, 10}, 1,000 repetitions each: the false-positive rate of the verdict
and of p < .05 under the null (goal: ≤ 5% plus two Monte-Carlo standard errors), and the power of
the verdict at each Δ. The floor, measured on the same simulated runs: McNemar's exact test over
pooled trials (trial i of A paired with trial i of B, every pair counted as independent), the
method the product used before. Then the width of the 95% intervals at 0/n, n/n and n/2: of an
accuracy (Clopper–Pearson), and of Δ when 0, all or half of the cases improved.

Prints a table and ends with one JSON line.
"""

from __future__ import annotations

import json
import time
from functools import cache
from math import sqrt

import numpy as np
from scipy import stats

from ovtui.train.inference import ALPHA, accuracy_interval, infer_counts, paired

REPETITIONS = 1000
CASES = (5, 15, 50)
TRIALS = (1, 5, 10)
EFFECTS = (0.10, 0.20)
NULL_SPREAD = 0.20
SEED = 20261202
MC_LIMIT = ALPHA + 2 * sqrt(ALPHA * (1 - ALPHA) / REPETITIONS)  # 5% + two Monte-Carlo SEs


@cache
def pooled_mcnemar(a_only: int, b_only: int) -> float:
    """The old method: the exact McNemar p over trials pooled as if independent."""
    n = a_only + b_only
    return 1.0 if n == 0 else float(stats.binomtest(b_only, n, 0.5).pvalue)


def simulate(
    rng: np.random.Generator, n: int, trials: int, shift: np.ndarray, base: np.ndarray
) -> dict[str, float]:
    """One comparison: A at ``base``, B at ``base + shift`` per case; the verdict and both p's."""
    a = rng.random((n, trials)) < base[:, None]
    b = rng.random((n, trials)) < (base + shift)[:, None]
    names = [f"c{i:02d}" for i in range(n)]
    result = paired(
        {c: [int(x) for x in row] for c, row in zip(names, a, strict=True)},
        {c: [int(x) for x in row] for c, row in zip(names, b, strict=True)},
    ).inference
    old = pooled_mcnemar(int((a & ~b).sum()), int((b & ~a).sum()))
    return {
        "verdict": result.direction != "same",
        "better": result.direction == "better",
        "p": result.p_value,
        "old": old,
    }


def cell(rng: np.random.Generator, n: int, trials: int) -> dict[str, float]:
    null = []
    for _ in range(REPETITIONS):
        base = rng.uniform(0.25, 0.75, n)
        null.append(simulate(rng, n, trials, rng.choice([-NULL_SPREAD, NULL_SPREAD], n), base))
    out = {
        "n": n,
        "trials": trials,
        "fpr_verdict": float(np.mean([r["verdict"] for r in null])),
        "fpr_p05": float(np.mean([r["p"] < ALPHA for r in null])),
        "fpr_pooled_mcnemar": float(np.mean([r["old"] < ALPHA for r in null])),
    }
    for effect in EFFECTS:
        runs = [
            simulate(rng, n, trials, np.full(n, effect), rng.uniform(0.25, 0.75, n))
            for _ in range(REPETITIONS)
        ]
        out[f"power_{round(effect * 100)}pp"] = float(np.mean([r["better"] for r in runs]))
    return out


def widths(n: int) -> dict[str, float]:
    half = n // 2
    acc = {k: accuracy_interval(passed, n) for k, passed in (("0/n", 0), ("n/n", n), ("n/2", half))}
    delta = {k: infer_counts(n, up, 0).ci for k, up in (("0/n", 0), ("n/n", n), ("n/2", half))}
    return {
        **{f"accuracy {k}": hi - lo for k, (lo, hi) in acc.items()},
        **{f"delta {k}": hi - lo for k, (lo, hi) in delta.items()},
    }


def main() -> None:
    started = time.perf_counter()
    rng = np.random.default_rng(SEED)
    cells = [cell(rng, n, trials) for n in CASES for trials in TRIALS]
    print(
        f"{REPETITIONS} repetitions per cell; goal: false positives ≤ {MC_LIMIT:.1%} (5% + 2 Monte-Carlo SE)"
    )
    head = ("n", 3), ("trials", 6), ("FPR verdict", 11), ("FPR p<.05", 9), ("floor: pooled McNemar", 21)
    print(" ".join(f"{t:>{w}}" for t, w in (*head, ("power 10pp", 10), ("power 20pp", 10))))
    for c in cells:
        print(
            f"{c['n']:>3} {c['trials']:>6} {c['fpr_verdict']:>11.1%} {c['fpr_p05']:>9.1%} "
            f"{c['fpr_pooled_mcnemar']:>21.1%} {c['power_10pp']:>10.1%} {c['power_20pp']:>10.1%}"
        )
    interval = {n: widths(n) for n in CASES}
    print("\n95% interval widths (accuracy: Clopper–Pearson; delta: 0, all or half of the cases improved)")
    for n, w in interval.items():
        print(f"n={n:>2}: " + ", ".join(f"{k} {v:.3f}" for k, v in w.items()))
    worst = max(max(c["fpr_verdict"], c["fpr_p05"]) for c in cells)
    seconds = time.perf_counter() - started
    print(f"\nworst false-positive rate {worst:.1%} (limit {MC_LIMIT:.1%}); {seconds:.0f} s")
    print(
        json.dumps(
            {
                "bench": "stats_calibration",
                "repetitions": REPETITIONS,
                "limit": round(MC_LIMIT, 4),
                "calibrated": worst <= MC_LIMIT,
                "worst_fpr": round(worst, 4),
                "worst_fpr_floor_pooled_mcnemar": round(max(c["fpr_pooled_mcnemar"] for c in cells), 4),
                "cells": [
                    {k: round(v, 4) if isinstance(v, float) else v for k, v in c.items()} for c in cells
                ],
                "interval_widths": {
                    str(n): {k: round(v, 4) for k, v in w.items()} for n, w in interval.items()
                },
                "seconds": round(seconds, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
