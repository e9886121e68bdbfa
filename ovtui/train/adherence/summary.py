"""What an experience's adherence record says: pass rates when followed and when violated, with
exact intervals, and a class.

The case is the unit: a case's followed uses count as one observation (passed when most of them
passed; a tie is not a pass), its violated uses as another, so a case run many times weighs as
much as one run once. The class needs enough informative uses (``MIN_USES`` followed or violated)
and then says, in this order:

- **ignored** — most uses break it: the exact 95% interval of the share of uses that violated it
  lies above one half;
- **helps when followed** / **misleads** — with at least ``MIN_CASES`` cases on each side, the cases
  pass more (helps) or less (misleads) when it was followed than when it was violated, by Fisher's
  exact test at 5% (two-sided);
- **no clear difference** — enough cases on each side, and the test finds no difference;
- **too few uses to say** — anything less (it is never violated often enough to compare, say).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from scipy.stats import binomtest, fisher_exact

from ovtui.train.adherence.store import DirectiveRecord, ExperienceRecord

MIN_USES = 5
MIN_CASES = 5
ALPHA = 0.05
AdherenceClass = Literal[
    "ignored", "helps when followed", "misleads", "no clear difference", "too few uses to say"
]


@dataclass(frozen=True, slots=True)
class Rate:
    passed: int
    cases: int
    low: float
    high: float

    @property
    def rate(self) -> float:
        return self.passed / self.cases

    @classmethod
    def of(cls, passed: int, cases: int) -> Rate | None:
        if cases == 0:
            return None
        interval = binomtest(passed, cases).proportion_ci(confidence_level=1 - ALPHA, method="exact")
        return cls(passed, cases, float(interval.low), float(interval.high))

    def text(self) -> str:
        return f"{self.rate:.0%} of {self.cases} case(s), 95% CI [{self.low:.0%}, {self.high:.0%}]"

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "cases": self.cases, "rate": self.rate, "ci": [self.low, self.high]}


@dataclass(frozen=True, slots=True)
class Adherence:
    uri: str
    record: ExperienceRecord
    followed_rate: Rate | None
    violated_rate: Rate | None
    p_value: float | None
    klass: AdherenceClass
    reason: str

    @property
    def most_ignored(self) -> DirectiveRecord | None:
        """The directive broken most often (None: none broken)."""
        broken = [d for d in self.record.directives if d.violated]
        return max(broken, key=lambda d: (d.violated / (d.violated + d.followed), d.violated), default=None)

    def line(self) -> str:
        r = self.record
        rates = [
            f"followed {self.followed_rate.text()}" if self.followed_rate else "",
            f"violated {self.violated_rate.text()}" if self.violated_rate else "",
        ]
        shown = " · ".join(x for x in rates if x)
        counts = f"{r.uses} use(s): {r.followed} followed, {r.violated} violated, {r.not_applicable} n/a"
        return f"{self.klass} ({self.reason}) · {counts}" + (f" · {shown}" if shown else "")

    def to_json(self) -> dict[str, Any]:
        r = self.record
        return {
            "experience": r.name,
            "uri": self.uri,
            "version": r.version,
            "uses": r.uses,
            "followed": r.followed,
            "violated": r.violated,
            "not_applicable": r.not_applicable,
            "unchecked": r.unchecked,
            "pass_rate_followed": self.followed_rate.rate if self.followed_rate else None,
            "pass_rate_violated": self.violated_rate.rate if self.violated_rate else None,
            "followed_cases": self.followed_rate.to_json() if self.followed_rate else None,
            "violated_cases": self.violated_rate.to_json() if self.violated_rate else None,
            "p_value": self.p_value,
            "class": self.klass,
            "reason": self.reason,
            "directives": [d.model_dump(mode="json") for d in r.directives],
        }


def _case_outcomes(record: ExperienceRecord) -> tuple[list[bool], list[bool]]:
    followed: list[bool] = []
    violated: list[bool] = []
    for passed_f, failed_f, passed_v, failed_v in record.cases.values():
        if passed_f + failed_f:
            followed.append(passed_f > failed_f)
        if passed_v + failed_v:
            violated.append(passed_v > failed_v)
    return followed, violated


def summarise(uri: str, record: ExperienceRecord) -> Adherence:
    followed, violated = _case_outcomes(record)
    f_rate, v_rate = Rate.of(sum(followed), len(followed)), Rate.of(sum(violated), len(violated))
    applied = record.followed + record.violated

    def verdict(klass: AdherenceClass, reason: str, p: float | None = None) -> Adherence:
        return Adherence(uri, record, f_rate, v_rate, p, klass, reason)

    if applied < MIN_USES:
        return verdict("too few uses to say", f"{applied} use(s) it applied to, {MIN_USES} needed")
    share = binomtest(record.violated, applied).proportion_ci(confidence_level=1 - ALPHA, method="exact")
    if share.low > 0.5:
        return verdict(
            "ignored", f"violated in {record.violated} of {applied} uses, 95% CI from {share.low:.0%}"
        )
    if len(followed) < MIN_CASES or len(violated) < MIN_CASES:
        return verdict(
            "too few uses to say",
            f"{len(followed)} followed and {len(violated)} violated case(s), {MIN_CASES} of each needed",
        )
    table = [[sum(followed), len(followed) - sum(followed)], [sum(violated), len(violated) - sum(violated)]]
    p = float(fisher_exact(table).pvalue)
    if p < ALPHA and f_rate and v_rate:
        klass: AdherenceClass = "helps when followed" if f_rate.rate > v_rate.rate else "misleads"
        return verdict(klass, f"Fisher's exact test p = {p:.3g}", p)
    return verdict("no clear difference", f"Fisher's exact test p = {p:.3g}", p)


def summaries(experiences: dict[str, ExperienceRecord]) -> list[Adherence]:
    return [summarise(uri, record) for uri, record in sorted(experiences.items(), key=lambda i: i[1].name)]
