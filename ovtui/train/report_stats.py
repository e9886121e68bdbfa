"""Statistics for run reports: which cases flipped between the baseline and the final eval, and
pass^k over repeated trials (the delta's interval and test are ``ovtui.train.inference``'s)."""

from __future__ import annotations

from math import comb


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
