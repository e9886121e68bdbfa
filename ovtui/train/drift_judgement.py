"""Whether an experience got worse after a drift: its cases' outcomes before the drift (the results
it fed, from the use ledger) against the rerun now, by the paired rule of ``compare``
(``ovtui.train.inference``). Only an experience whose cases do worse by that rule is stale; one
failed trial, or cases with no outcome from before, never are.
"""

from __future__ import annotations

from collections.abc import Iterable

from ovtui.train.inference import paired
from ovtui.train.revalidation import DriftCheck, Judged, StaleExperience

OUTCOME_PASSED = {"success": 1, "failure": 0, "partial": 0}  # ledger outcomes that say pass or fail


def before_drift(fed: Iterable[tuple[str, str]]) -> dict[str, list[int]]:
    """(case, ledger outcome) pairs as per-case results (an outcome that says neither is left out)."""
    found: dict[str, list[int]] = {}
    for case, outcome in fed:
        if outcome in OUTCOME_PASSED:
            found.setdefault(case, []).append(OUTCOME_PASSED[outcome])
    return found


def judge(
    check: DriftCheck,
    results: dict[str, list[int]],
    evidence: dict[str, str],
    before: dict[str, dict[str, list[int]]],
) -> tuple[list[StaleExperience], list[Judged]]:
    """Each affected experience: its cases before the drift (``before``, by URI) against now, by
    the paired rule; stale when they do worse."""
    stale, judged = [], []
    for a in check.affected:
        then = {c: t for c, t in before.get(a.uri, {}).items() if c in a.cases}
        now = {c: results[c] for c in a.cases if c in results}
        result = paired(then, now)
        found = result.inference
        low, high = found.ci
        line = (
            f"before the drift {result.a_rate:.1%} → now {result.b_rate:.1%} on {result.cases} case(s) "
            f"with outcomes from before: Δ {found.delta:+.1%}, 95% CI [{low:+.1%}, {high:+.1%}], "
            f"p={found.p_value:.3g}"
        )
        worse = found.direction == "worse"
        line += "; worse: stale" if worse else f"; not stale ({found.why_not() or 'not worse'})"
        judged.append(Judged(name=a.name, cases=result.cases, stale=worse, line=line))
        if worse:
            failing = {c: evidence.get(c, "failed") for c in now if not all(now[c])}
            stale.append(StaleExperience(uri=a.uri, name=a.name, drift=a.drift, failing=failing, paired=line))
    return stale, judged
