"""Statistics for run reports: which cases flipped between the baseline and the
final eval, pass^k over repeated trials, and a paired bootstrap interval of the accuracy delta."""

from __future__ import annotations

import random
from math import comb

BOOTSTRAP_SAMPLES = 2000


def flips(baseline: dict[str, list[int]], final: dict[str, list[int]]) -> tuple[list[str], list[str]]:
    """(fail→pass, pass→fail): cases whose majority outcome changed, in name order."""

    def passed(trials: list[int]) -> bool:
        return sum(trials) * 2 > len(trials)

    common = sorted(set(baseline) & set(final))
    fixed = [c for c in common if not passed(baseline[c]) and passed(final[c])]
    broken = [c for c in common if passed(baseline[c]) and not passed(final[c])]
    return fixed, broken


def pass_hat_k(results: dict[str, list[int]], k: int) -> float | None:
    """tau2's pass^k: the chance that k trials of a case, drawn from its n, all pass, averaged over
    cases (C(c, k) / C(n, k) with c passes out of n). None when some case has fewer than k trials."""
    if not results or any(len(t) < k for t in results.values()):
        return None
    return sum(comb(sum(t), k) / comb(len(t), k) for t in results.values()) / len(results)


def bootstrap_delta(
    baseline: dict[str, list[int]],
    final: dict[str, list[int]],
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile interval of final − baseline accuracy, resampling cases (paired) with replacement.
    Seeded, so the same results always print the same interval."""
    common = sorted(set(baseline) & set(final))
    if len(common) < 2:
        return None
    pairs = [
        (sum(final[c]) / len(final[c]) - sum(baseline[c]) / len(baseline[c]))
        for c in common
        if final[c] and baseline[c]
    ]
    if len(pairs) < 2:
        return None
    rng = random.Random(seed)
    n = len(pairs)
    deltas = sorted(sum(pairs[rng.randrange(n)] for _ in range(n)) / n for _ in range(samples))
    tail = (1 - confidence) / 2
    return deltas[int(tail * (samples - 1))], deltas[int((1 - tail) * (samples - 1))]
