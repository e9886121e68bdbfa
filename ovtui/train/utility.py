"""Per-experience utility and cost: a leave-one-out ablation of each experience, judged by the
case (``ovtui.train.inference``: the test, its interval and enough informative cases).

An experience is measured on the cases it was served for (the use ledger's results that wrote a
trajectory, each trajectory naming its case) and the cases it was learned from (its
``derived_from`` links to trajectories), both read as ``revalidation`` reads linked cases. The
current policy runs all of those cases twice (the second run is the A/A null: what the same policy
moves by itself); then, for each experience, the policy without that file runs its cases with the
same trials. Paired with the first run, a difference the inference finds on those cases is
**helpful** (the file's removal loses cases) or **harmful** (its removal gains cases), once the
p-values of all the experiences measured together are corrected for multiple testing
(Benjamini–Hochberg). **No measurable effect** (``none``) needs power: the 95% interval must lie
within ±``EQUIVALENCE``; a difference too small to call on too few cases is **unknown**, and so is
any experience on whose cases the policy against itself moved. Each effect is also put on a common
scale: the accuracy the file adds over every case measured, and its share of what the whole policy
adds over no experience at all (shares need not add up: files overlap and interact). Its cost is the
prompt tokens its block adds to each case it is served for, counted by ``ovtui.llm.tokens`` (an
estimate, where no tokenizer loads, is shown ``≈N``).

Results are kept in ``.ovtui/utility.json``, each with the policy snapshot it was measured
against, and written after every experience, so a run stopped half-way keeps what it measured.
A harmful or no-effect experience becomes a delete proposal for a person to review, never an
apply, and only after the deletions are checked together (``ovtui.train.pruning``): measured one at
a time, two copies of one useful file are each "no effect", yet deleting both loses what either
gave.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import Field, ValidationError
from scipy import stats

from ovtui.core.domain import Case, Experience, ExperienceSet, Model
from ovtui.core.errors import OvtuiError
from ovtui.core.interfaces import CaseLoader
from ovtui.llm.tokens import TokenCounter, figure
from ovtui.storage.fsio import atomic_write_text
from ovtui.storage.locks import WorkspaceLock
from ovtui.storage.paths import WorkspacePaths
from ovtui.storage.reading import read_model
from ovtui.train.comparison import PairedSummary, interval_text
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.train.components.trials import RepeatedCases
from ovtui.train.inference import ALPHA, PairedResult, paired

if TYPE_CHECKING:
    from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline

Verdict = Literal["helpful", "harmful", "none", "unknown"]
EQUIVALENCE = 0.10  # "no effect" only when the 95% interval lies within ±10 pp
UTILITY_FILE = ".ovtui/utility.json"
MAX_UTILITY_FILE_BYTES = 16 * 1024 * 1024
STAGE_WITH, STAGE_AGAIN, STAGE_WITHOUT = "utility_with", "utility_again", "utility_without"
STAGE_EMPTY = "utility_empty"  # every case with no experience: what the whole policy adds
STAGE_MEASURED = "utility"  # the progress of the experiences measured, one event after each
PLAN_SOURCE = "utility"
NAMES_SAID = 10  # experiences named in the estimate before "+N more"
_VERDICT_OF: dict[str, Verdict] = {"better": "helpful", "worse": "harmful"}
_SAID = {
    "helpful": "helpful",
    "harmful": "harmful",
    "none": "no measurable effect",
    "unknown": "unknown (too little evidence either way)",
}
CORRECTION = "Benjamini–Hochberg"


def prompt_block(experience: Experience) -> str:
    """What serving ``experience`` adds to an agent's prompt (the block the LLM agent writes)."""
    return f"### {experience.name}\n{experience.content.strip()}"


class ExperienceUtility(Model):
    """One experience's ablation: with it (``with_rate``) against without it, on its cases."""

    name: str
    uri: str
    version: int
    verdict: Verdict
    cases: list[str]
    trials: int
    with_rate: float
    without_rate: float
    delta: float  # with minus without: > 0 the file helps
    se: float
    ci: list[float] | None  # [low, high] of the delta (None only in an older record)
    p_value: float
    test: str = ""
    informative: int = 0  # cases whose outcome moved
    q_value: float | None = None  # p corrected for the experiences measured together (None: not yet)
    why: str = ""  # why a verdict is unknown
    effect: float | None = None  # accuracy it adds over every case the run measured (common scale)
    share: float | None = None  # effect over what the whole policy adds (None: the policy adds nothing)
    tokens_per_case: int
    tokenizer: str = ""  # what counted tokens_per_case ("": an older record's estimate)
    calls: int  # agent runs its own ablation cost (the shared runs with the policy not counted)
    policy: str  # the snapshot id of the policy it was measured against
    measured_at: str

    def line(self) -> str:
        corrected = f", {CORRECTION} q={self.q_value:.3g}" if self.q_value is not None else ""
        why = f" — {self.why}" if self.why else ""
        scale = f"; {self.effect:+.1%} of all measured cases" if self.effect is not None else ""
        scale += f" ({self.share:.0%} of the policy's gain)" if self.share is not None else ""
        return (
            f"{_SAID[self.verdict]}: Δ {self.delta:+.1%} (95% CI {interval_text(self.ci)}, "
            f"p={self.p_value:.3g}{corrected}) on {len(self.cases)} case(s) × {self.trials}{scale}; "
            f"{figure(self.tokens_per_case, self.tokenizer)} tokens per case{why}"
        )


class UtilityRecord(Model):
    """``.ovtui/utility.json``: the newest measurement of each experience, by name."""

    tokenizer: str = ""
    experiences: dict[str, ExperienceUtility] = Field(default_factory=dict)


def classify(
    with_it: Mapping[str, list[int]], without_it: Mapping[str, list[int]], null: PairedResult
) -> tuple[Verdict, PairedResult, str]:
    """The verdict on one experience, before correction: the policy with it (B) against without it
    (A) by the case; ``null`` is the policy against itself on the same cases (if that moved, the
    measurement is unstable). Also why the verdict is unknown ("" when it is not)."""
    result = paired(dict(without_it), dict(with_it))
    found = result.inference
    if null.inference.direction != "same":
        return "unknown", result, "the policy against itself moved on these cases: unstable"
    if found.direction in _VERDICT_OF:
        return _VERDICT_OF[found.direction], result, ""
    if found.ci[0] >= -EQUIVALENCE and found.ci[1] <= EQUIVALENCE:
        return "none", result, ""
    why = f"its 95% interval reaches past ±{EQUIVALENCE:.0%}; {found.why_not()}; {found.power_text()}"
    return "unknown", result, why


def corrected(entries: list[ExperienceUtility], policy_gain: float | None, measured: int) -> None:
    """The verdicts of experiences measured together, corrected for testing them all at once
    (Benjamini–Hochberg over their p-values: a helpful or harmful verdict stands only where q < α),
    and each effect on the common scale: accuracy added over all ``measured`` cases, and its share
    of ``policy_gain`` (the whole policy against none)."""
    if not entries:
        return
    qs = stats.false_discovery_control([e.p_value for e in entries], method="bh")
    for entry, q in zip(entries, qs, strict=True):
        entry.q_value = float(q)
        if entry.verdict in ("helpful", "harmful") and q >= ALPHA:
            entry.verdict = "unknown"
            entry.why = (
                f"p={entry.p_value:.3g} is q={q:.3g} ≥ {ALPHA:g} once {len(entries)} tests are corrected"
            )
        entry.effect = entry.delta * len(entry.cases) / measured if measured else None
        if entry.effect is not None and policy_gain:
            entry.share = entry.effect / policy_gain


# --- which cases, and what it will cost ----------------------------------------------------------


def _some(names: list[str]) -> str:
    more = f" (+{len(names) - NAMES_SAID} more)" if len(names) > NAMES_SAID else ""
    return ", ".join(names[:NAMES_SAID]) + more


@dataclass(frozen=True)
class Ablation:
    experience: Experience
    cases: list[str]  # its cases in the split, in the split's order


@dataclass
class UtilityPlan:
    """What a utility run will do: its cases, each experience's ablation, and its agent runs."""

    dataset: str
    split: str
    policy: ExperienceSet
    policy_id: str
    cases: list[Case]  # every case some ablation needs, in the split's order
    ablations: list[Ablation]
    trials: int
    unmeasured: list[str] = field(default_factory=list)  # experiences with no case in the split

    @property
    def calls(self) -> int:
        """Agent runs: the policy twice on every case (with, and the null), no experience once, and
        each ablation once (deletions checked together before a plan is offered come on top)."""
        return self.trials * (3 * len(self.cases) + sum(len(a.cases) for a in self.ablations))

    def lines(self) -> list[str]:
        out = [
            f"{len(self.ablations)} experience(s) on {len(self.cases)} case(s) of "
            f"{self.dataset}/{self.split} × {self.trials} trial(s): {self.calls} agent run(s)"
        ]
        if self.ablations:
            out.append(f"measuring: {_some([a.experience.name for a in self.ablations])}")
        if self.unmeasured:
            out.append(f"not measured (no case of theirs in the split): {_some(self.unmeasured)}")
        return out


def plan_ablations(
    policy: ExperienceSet,
    policy_id: str,
    chosen: list[Experience],
    cases_of: Callable[[Experience], set[str]],
    split_cases: list[Case],
    where: tuple[str, str, int],
) -> UtilityPlan:
    """Each chosen experience with its cases that the split holds (``where``: dataset, split, trials)."""
    dataset, split, trials = where
    ablations: list[Ablation] = []
    unmeasured: list[str] = []
    for experience in chosen:
        names = cases_of(experience)
        mine = [c.name for c in split_cases if c.name in names]
        if mine:
            ablations.append(Ablation(experience, mine))
        else:
            unmeasured.append(experience.name)
    needed = {c for a in ablations for c in a.cases}
    cases = [c for c in split_cases if c.name in needed]
    return UtilityPlan(dataset, split, policy, policy_id, cases, ablations, trials, unmeasured)


def choose(
    policy: ExperienceSet, names: list[str], top: int | None, uses: Mapping[str, int]
) -> list[Experience]:
    """The experiences asked for by name, else the ``top`` most used (``uses`` by URI), else all."""
    by_name = policy.by_name()
    if names:
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise OvtuiError(
                f"--experience: no experience named {', '.join(map(repr, unknown))} "
                f"(there are: {', '.join(sorted(by_name)) or 'none'})"
            )
        return [by_name[n] for n in dict.fromkeys(names)]
    ordered = sorted(policy.policies, key=lambda e: (-uses.get(e.uri, 0), e.name))
    return ordered[:top] if top is not None else ordered


def without(policy: ExperienceSet, *gone: Experience) -> ExperienceSet:
    """The policy less some files (a new snapshot: nothing derived from the whole one is shared)."""
    uris = {e.uri for e in gone}
    return ExperienceSet(
        root_uri=policy.root_uri,
        policies=[e for e in policy.policies if e.uri not in uris],
        metadata=dict(policy.metadata),
    )


def utility_of(
    ablation: Ablation,
    runs: tuple[Mapping[str, list[int]], Mapping[str, list[int]], Mapping[str, list[int]]],
    tokens: int,
    policy_id: str,
    tokenizer: str = "",
) -> ExperienceUtility:
    """``runs``: with the experience, the null (with it again), without it; ``tokens`` its block's
    cost, counted by ``tokenizer``. Not yet corrected for the other experiences (``corrected``)."""
    with_it, again, without_it = ({c: r[c] for c in ablation.cases if c in r} for r in runs)
    verdict, result, why = classify(with_it, without_it, paired(with_it, again))
    trials = min((len(t) for t in with_it.values()), default=0)
    summary = PairedSummary.of(result)
    return ExperienceUtility(
        name=ablation.experience.name,
        uri=ablation.experience.uri,
        version=ablation.experience.version,
        verdict=verdict,
        cases=ablation.cases,
        trials=trials,
        with_rate=summary.b_rate,
        without_rate=summary.a_rate,
        **summary.model_dump(include={"delta", "se", "ci", "p_value", "test"}),
        informative=summary.informative,
        why=why,
        tokens_per_case=tokens,
        tokenizer=tokenizer,
        calls=sum(len(t) for t in without_it.values()),
        policy=policy_id,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def case_runs(cases: list[Case], trials: int, batch: int) -> CaseLoader:
    loader = ListCaseLoader(cases, batch)
    return RepeatedCases(loader, trials) if trials > 1 else loader


def policy_gain(with_it: Mapping[str, list[int]], empty: Mapping[str, list[int]]) -> float | None:
    """What the whole policy adds over no experience, on the cases both ran (None: none ran)."""
    result = paired(dict(empty), dict(with_it))
    return result.delta if result.cases else None


async def measure(
    plan: UtilityPlan,
    pipeline: OfflinePolicyOptimizationPipeline,
    batch: int,
    tokens: TokenCounter,
    save: Callable[[ExperienceUtility], Awaitable[None]],
) -> dict[str, list[int]]:
    """The policy on every case, again (the null) and with no experience, then each ablation: each
    result handed to ``save`` as soon as it is known, so a cancelled run keeps those before it; at
    the end all are corrected together and saved again. Returns the policy's results (with)."""
    every = case_runs(plan.cases, plan.trials, batch)
    with_it = (await pipeline.eval(every, plan.policy, stage=STAGE_WITH)).report.results
    again = (await pipeline.eval(every, plan.policy, stage=STAGE_AGAIN)).report.results
    empty = without(plan.policy, *plan.policy.policies)
    nothing = (await pipeline.eval(every, empty, stage=STAGE_EMPTY)).report.results
    chosen = {c.name: c for c in plan.cases}
    entries: list[ExperienceUtility] = []
    for done, ablation in enumerate(plan.ablations, 1):
        loader = case_runs([chosen[c] for c in ablation.cases], plan.trials, batch)
        less = without(plan.policy, ablation.experience)
        without_it = (await pipeline.eval(loader, less, stage=STAGE_WITHOUT)).report.results
        cost = tokens(prompt_block(ablation.experience))
        runs = (with_it, again, without_it)
        entry = utility_of(ablation, runs, cost, plan.policy_id, tokens.tokenizer)
        entries.append(entry)
        await save(entry)
        pipeline.events.progress(
            STAGE_MEASURED, done, len(plan.ablations), name=entry.name, line=entry.line()
        )
    corrected(entries, policy_gain(with_it, nothing), len(plan.cases))
    for entry in entries:
        await save(entry)
    return with_it


# --- the file ------------------------------------------------------------------------------------


def read_utility(paths: WorkspacePaths) -> UtilityRecord:
    """What was measured so far (nothing yet: empty); a damaged file is one line naming it."""
    try:
        return read_model(
            paths.root / UTILITY_FILE, UtilityRecord, MAX_UTILITY_FILE_BYTES, what="the utility results"
        )
    except FileNotFoundError:
        return UtilityRecord()
    except ValidationError:
        raise OvtuiError(f"{UTILITY_FILE}: not utility results (move it aside to measure afresh)") from None


def save_utility(
    paths: WorkspacePaths, lock: WorkspaceLock, entry: ExperienceUtility, tokenizer: str
) -> None:
    """Add one measurement, replacing that experience's older one, written whole under the lock."""
    with lock.hold("save a utility measurement"):
        record = read_utility(paths)
        record.tokenizer = tokenizer
        record.experiences[entry.name] = entry
        atomic_write_text(paths.root / UTILITY_FILE, record.model_dump_json(indent=2), root=paths.root)


@dataclass
class UtilityOutcome:
    """A utility run: its report's id, what it measured (all of it, when cancelled: so far), the
    plan it parked (None: nothing to prune)."""

    run_id: str
    measured: list[ExperienceUtility]
    cancelled: bool
    plan_id: str | None = None
    failed: str | None = None
    checked: str = ""  # the deletions' joint check, in words ("": none was needed)
    kept: list[str] = field(default_factory=list)  # candidates kept by it (redundant), one line each
    checked_calls: int = 0
