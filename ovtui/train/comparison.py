"""The result of ``ovtui compare``: B against A, A against itself beside it, and the verdict.

A, B and A again (the A/A null) run the same cases with the same trials, in the same order; each
run is a stage of the compare run's report (``compare_a``, ``compare_b``, ``compare_aa``). What is
saved is the paired result of B against A and of A against A, the verdict by the paired rule
(``ovtui.train.paired``), and the evidence of every case that flipped: what each policy's agent
did there.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from ovtui.core.domain import Model
from ovtui.train.paired import PairedResult, paired, verdict

STAGE_A, STAGE_B, STAGE_AA = "compare_a", "compare_b", "compare_aa"


def interval_text(ci: list[float] | None) -> str:
    """A delta's 95% interval as printed: ``[low, high]`` in percent, or why there is none."""
    return f"[{ci[0]:+.1%}, {ci[1]:+.1%}]" if ci else "n/a (fewer than two cases)"


class PairedSummary(Model):
    cases: int
    a_rate: float
    b_rate: float
    delta: float
    se: float
    ci: list[float] | None  # [low, high] of the delta; None below two cases
    p_value: float
    a_only: int
    b_only: int
    gained: list[str] = Field(default_factory=list)
    lost: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, result: PairedResult) -> PairedSummary:
        return cls(
            cases=result.cases,
            a_rate=result.a_rate,
            b_rate=result.b_rate,
            delta=result.delta,
            se=result.se,
            ci=list(result.ci) if result.ci is not None else None,
            p_value=result.p_value,
            a_only=result.a_only,
            b_only=result.b_only,
            gained=result.gained,
            lost=result.lost,
        )

    def line(self) -> str:
        ci = interval_text(self.ci)
        return (
            f"Δ {self.delta:+.1%} (SE {self.se:.1%}), 95% CI {ci}, "
            f"McNemar p={self.p_value:.3g} ({self.b_only} trial(s) only B passed, {self.a_only} only A)"
        )


class Comparison(Model):
    a: str  # how A was named: current, history/<id>, a folder
    b: str
    split: str
    trials: int
    k: float
    ab: PairedSummary
    aa: PairedSummary
    verdict: str
    # Case -> {"a": what A's agent did, "b": what B's did}, for every case that flipped either way.
    evidence: dict[str, dict[str, str]] = Field(default_factory=dict)

    def to_json(self, run_id: str | None = None) -> dict[str, Any]:
        """``ovtui compare --json``: one object."""
        return {
            "run_id": run_id,
            "a": self.a,
            "b": self.b,
            "split": self.split,
            "trials": self.trials,
            "cases": self.ab.cases,
            "a_rate": self.ab.a_rate,
            "b_rate": self.ab.b_rate,
            "delta": self.ab.delta,
            "se": self.ab.se,
            "ci": self.ab.ci,
            "p_value": self.ab.p_value,
            "k": self.k,
            "flips": {"gained": self.ab.gained, "lost": self.ab.lost},
            "aa": {"delta": self.aa.delta, "ci": self.aa.ci, "se": self.aa.se, "p_value": self.aa.p_value},
            "verdict": self.verdict,
            "evidence": self.evidence,
        }

    def lines(self) -> list[str]:
        """What ``ovtui compare`` prints."""
        out = [
            f"A = {self.a} · B = {self.b} · split {self.split} · "
            f"{self.ab.cases} case(s) × {self.trials} trial(s)",
            f"A {self.ab.a_rate:.1%} → B {self.ab.b_rate:.1%}: {self.ab.line()}",
            f"A/A null (A run again): {self.aa.line()}",
            f"B gains ({len(self.ab.gained)}): {', '.join(self.ab.gained) or 'none'}",
        ]
        out += [
            f"  {case}: A {self.evidence[case]['a']} · B {self.evidence[case]['b']}"
            for case in self.ab.gained
        ]
        out.append(f"B loses ({len(self.ab.lost)}): {', '.join(self.ab.lost) or 'none'}")
        out += [
            f"  {case}: A {self.evidence[case]['a']} · B {self.evidence[case]['b']}" for case in self.ab.lost
        ]
        out.append(f"verdict (k={self.k:g}): {self.verdict}")
        return out


def comparison(
    labels: tuple[str, str],
    split: str,
    trials: int,
    k: float,
    results: tuple[dict[str, list[int]], dict[str, list[int]], dict[str, list[int]]],
    evidence: tuple[dict[str, str], dict[str, str]],
) -> Comparison:
    """B against A and A against A again (``results``: A, B, A again), judged with ``k``;
    ``evidence``: each case's outcome line under A and under B."""
    a, b, again = results
    ab, aa = paired(a, b), paired(a, again)
    flipped = [*ab.gained, *ab.lost]
    return Comparison(
        a=labels[0],
        b=labels[1],
        split=split,
        trials=trials,
        k=k,
        ab=PairedSummary.of(ab),
        aa=PairedSummary.of(aa),
        verdict=verdict(ab, aa, k),
        evidence={c: {"a": evidence[0].get(c, ""), "b": evidence[1].get(c, "")} for c in flipped},
    )
