"""A run's results case by case: which flipped between the baseline and the final eval (fail→pass
first, then pass→fail), which stayed, and how each ran (its evidence) before and after. An eval alone
lists its failed cases, then its passed ones. No Textual: unit-testable on its own."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ovtui.train.report_stats import flips
from ovtui.train.reports import RunReport, StageReport

# The groups in the order a person reads them: what improved, what broke, then the rest.
GROUPS = ("fail→pass", "pass→fail", "still failing", "still passing", "failed", "passed")


@dataclass(frozen=True)
class CaseResult:
    case: str
    group: str  # one of GROUPS
    before: str | None  # how it ran in the baseline (None: an eval alone)
    after: str

    def evidence(self) -> str:
        lines = [f"{self.case} · {self.group}"]
        if self.before is not None:
            lines.append(f"baseline: {self.before}")
        lines.append(f"{'final' if self.before is not None else 'eval'}: {self.after}")
        return "\n".join(lines)


def _passed(trials: list[int]) -> bool:
    return sum(trials) * 2 > len(trials)


def _trace(stage: StageReport, case: str) -> str:
    trials = stage.results.get(case, [])
    outcome = f"{sum(trials)}/{len(trials)} trials passed" if len(trials) > 1 else ""
    return stage.evidence.get(case) or outcome or ("passed" if _passed(trials) else "failed")


def case_results(report: RunReport) -> list[CaseResult]:
    """Every case of the run's last evaluation, grouped as GROUPS orders them, by name in a group."""
    first, last = report.stage("baseline_eval"), report.stage("final_eval") or report.stage("eval")
    if last is None:
        return []
    if first is None or not first.results:
        groups = {case: "passed" if _passed(t) else "failed" for case, t in last.results.items()}
        return _sorted(CaseResult(c, g, None, _trace(last, c)) for c, g in groups.items())
    fixed, broken = flips(first.results, last.results)
    rows = []
    for case, trials in last.results.items():
        if case in fixed:
            group = "fail→pass"
        elif case in broken:
            group = "pass→fail"
        else:
            group = "still passing" if _passed(trials) else "still failing"
        rows.append(CaseResult(case, group, _trace(first, case), _trace(last, case)))
    return _sorted(rows)


def _sorted(rows: Iterable[CaseResult]) -> list[CaseResult]:
    return sorted(rows, key=lambda r: (GROUPS.index(r.group), r.case))


def group_counts(rows: list[CaseResult]) -> str:
    """``fail→pass 2 · pass→fail 0 · still failing 13``: the groups the run has, with their sizes."""
    if not rows:
        return "no evaluated case"
    compared = rows[0].before is not None  # a baseline to compare with: the flips always show
    counts = {group: sum(r.group == group for r in rows) for group in GROUPS}
    flipped = ("fail→pass", "pass→fail")
    return " · ".join(f"{g} {n}" for g, n in counts.items() if n or (compared and g in flipped))
