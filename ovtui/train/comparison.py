"""The result of ``ovtui compare``: B against A, A against itself beside it, and the verdict.

A, B and A again (the A/A null) run the same cases with the same trials, in the same order; each
run is a stage of the compare run's report (``compare_a``, ``compare_b``, ``compare_aa``). What is
saved is the paired inference of B against A and of A against A (``ovtui.train.inference``: by the
case, trials averaged within it), the verdict, what the noise is, and the evidence of every case
that flipped: what each policy's agent did there.

The verdict is the inference's: better or worse only when the test, its interval and the count of
informative cases all say so. The A/A null is a check, not evidence: when A against itself differs
by the same rule, the measurement is unstable and no verdict is given; when every trial of every
case agreed, the null is zero by construction and the report says so instead of showing it.
"""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from ovtui.core.domain import Model
from ovtui.train.inference import ALPHA, DETERMINISTIC, NOISE, PairedResult, deterministic, paired

STAGE_A, STAGE_B, STAGE_AA = "compare_a", "compare_b", "compare_aa"


def interval_text(ci: list[float] | None) -> str:
    """A delta's 95% interval as printed: ``[low, high]`` in percent (none: no case ran)."""
    return f"[{ci[0]:+.1%}, {ci[1]:+.1%}]" if ci else "n/a (no case ran)"


class PairedSummary(Model):
    """One paired inference as saved (``ovtui.train.inference``)."""

    # A report written by an older ovtui (McNemar over pooled trials) still loads; its extra keys go.
    model_config = ConfigDict(extra="ignore")

    cases: int
    a_rate: float
    b_rate: float
    delta: float
    se: float
    ci: list[float] | None  # [low, high] of the delta (None only in an older report)
    p_value: float
    test: str = ""
    improved: int = 0  # cases whose pass rate rose
    worsened: int = 0
    direction: str = "same"  # better, worse or same by the one rule
    needs: str = ""  # why there is no verdict ("": there is one)
    power: str = ""  # the minimum detectable effect at this many cases, in words
    mde: float | None = None
    deterministic: bool = False
    gained: list[str] = Field(default_factory=list)
    lost: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, result: PairedResult) -> PairedSummary:
        inference = result.inference
        return cls(
            cases=inference.cases,
            a_rate=result.a_rate,
            b_rate=result.b_rate,
            delta=inference.delta,
            se=inference.se,
            ci=list(inference.ci),
            p_value=inference.p_value,
            test=inference.test,
            improved=inference.improved,
            worsened=inference.worsened,
            direction=inference.direction,
            needs=inference.why_not(),
            power=inference.power_text(),
            mde=inference.mde,
            deterministic=result.deterministic,
            gained=result.gained,
            lost=result.lost,
        )

    @property
    def informative(self) -> int:
        return self.improved + self.worsened

    def line(self) -> str:
        return (
            f"Δ {self.delta:+.1%}, 95% CI {interval_text(self.ci)}, "
            f"{self.test or 'test'} p={self.p_value:.3g} "
            f"({self.improved} case(s) up, {self.worsened} down of {self.cases})"
        )


class Comparison(Model):
    model_config = ConfigDict(extra="ignore")  # an older report's ``k`` goes

    a: str  # how A was named: current, history/<id>, a folder
    b: str
    split: str
    trials: int
    ab: PairedSummary
    aa: PairedSummary
    verdict: str
    noise: str = ""  # what the noise is: zero by construction, or what A against itself moved
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
            "test": self.ab.test,
            "alpha": ALPHA,
            "informative": self.ab.informative,
            "needs": self.ab.needs,
            "mde": self.ab.mde,
            "power": self.ab.power,
            "flips": {"gained": self.ab.gained, "lost": self.ab.lost},
            "aa": {
                "delta": self.aa.delta,
                "ci": self.aa.ci,
                "se": self.aa.se,
                "p_value": self.aa.p_value,
                "direction": self.aa.direction,
            },
            "noise": self.noise,
            "deterministic": self.noise == DETERMINISTIC,
            "verdict": self.verdict,
            "evidence": self.evidence,
        }

    def lines(self) -> list[str]:
        """What ``ovtui compare`` prints."""
        null = self.noise if self.noise == DETERMINISTIC else f"A/A null (A run again): {self.aa.line()}"
        out = [
            f"A = {self.a} · B = {self.b} · split {self.split} · "
            f"{self.ab.cases} case(s) × {self.trials} trial(s)",
            f"A {self.ab.a_rate:.1%} → B {self.ab.b_rate:.1%}: {self.ab.line()}",
            null,
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
        out.append(f"verdict (α={ALPHA:g}, by the case): {self.verdict}")
        return out


def noise_of(trials: int, aa: PairedResult, *runs: dict[str, list[int]]) -> str:
    """What the noise is: zero by construction when every trial of every case agreed in all three
    runs; otherwise what A against itself moved (with one trial a case cannot show it agrees)."""
    if trials > 1 and deterministic(*runs):
        return DETERMINISTIC
    if aa.inference.informative == 0:
        return "A run again changed no case (with one trial per case, agreement within a case is unseen)"
    return f"A run again moved {aa.inference.informative} case(s): Δ {aa.delta:+.1%} (the A/A null)"


def verdict_of(ab: PairedResult, aa: PairedResult) -> str:
    """The inference's verdict in words; none when A against itself differs by the same rule."""
    inference = ab.inference
    said = f"Δ {inference.delta:+.1%}, 95% CI [{inference.ci[0]:+.1%}, {inference.ci[1]:+.1%}]"
    said += f", p={inference.p_value:.3g}, {inference.informative} informative case(s)"
    if aa.inference.direction != "same":
        return f"{NOISE}: A against itself differs ({aa.delta:+.1%}, p={aa.inference.p_value:.3g}): unstable"
    if inference.direction == "better":
        return f"B is better than A ({said})"
    if inference.direction == "worse":
        return f"B is worse than A ({said})"
    return f"{NOISE}: {inference.why_not()}; {inference.power_text()}"


def comparison(
    labels: tuple[str, str],
    split: str,
    trials: int,
    results: tuple[dict[str, list[int]], dict[str, list[int]], dict[str, list[int]]],
    evidence: tuple[dict[str, str], dict[str, str]],
) -> Comparison:
    """B against A and A against A again (``results``: A, B, A again); ``evidence``: each case's
    outcome line under A and under B."""
    a, b, again = results
    ab, aa = paired(a, b), paired(a, again)
    flipped = [*ab.gained, *ab.lost]
    return Comparison(
        a=labels[0],
        b=labels[1],
        split=split,
        trials=trials,
        ab=PairedSummary.of(ab),
        aa=PairedSummary.of(aa),
        verdict=verdict_of(ab, aa),
        noise=noise_of(trials, aa, a, b, again),
        evidence={c: {"a": evidence[0].get(c, ""), "b": evidence[1].get(c, "")} for c in flipped},
    )
