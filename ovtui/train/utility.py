"""Per-experience utility and cost: a leave-one-out ablation of each experience, judged by the
paired rule of ``ovtui.train.paired``.

An experience is measured on the cases it was served for (the use ledger's results that wrote a
trajectory, each trajectory naming its case) and the cases it was learned from (its
``derived_from`` links to trajectories), both read as ``revalidation`` reads linked cases. The
current policy runs all of those cases twice (the second run is the A/A null: what the same policy
moves by itself); then, for each experience, the policy without that file runs its cases with the
same trials. Paired with the first run, a delta
past k·SE and beyond the null on those cases is **helpful** (the file's removal loses cases) or
**harmful** (its removal gains cases); anything else is no measurable effect. Its cost is the
prompt tokens its block adds to each case it is served for, counted by ``ovtui.llm.tokens`` (an
estimate, where no tokenizer loads, is shown ``≈N``).

Results are kept in ``.ovtui/utility.json``, each with the policy snapshot it was measured
against, and written after every experience, so a run stopped half-way keeps what it measured.
A harmful or no-effect experience becomes a delete proposal for a person to review: never an
apply.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from pydantic import Field, ValidationError

from ovtui.core.domain import Case, Experience, ExperienceSet, Model, PolicyPlanItem, PolicyUpdatePlan
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
from ovtui.train.paired import PairedResult, beyond_null, paired
from ovtui.train.review.plans import proposal_metadata

if TYPE_CHECKING:
    from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline

Verdict = Literal["helpful", "harmful", "none"]
UTILITY_FILE = ".ovtui/utility.json"
MAX_UTILITY_FILE_BYTES = 16 * 1024 * 1024
STAGE_WITH, STAGE_AGAIN, STAGE_WITHOUT = "utility_with", "utility_again", "utility_without"
STAGE_MEASURED = "utility"  # the progress of the experiences measured, one event after each
PLAN_SOURCE = "utility"
NAMES_SAID = 10  # experiences named in the estimate before "+N more"
_VERDICT_OF = {"better": "helpful", "worse": "harmful", "same": "none"}
_SAID = {"helpful": "helpful", "harmful": "harmful", "none": "no measurable effect"}


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
    ci: list[float] | None  # [low, high] of the delta; None below two cases
    p_value: float
    tokens_per_case: int
    tokenizer: str = ""  # what counted tokens_per_case ("": an older record's estimate)
    calls: int  # agent runs its own ablation cost (the shared runs with the policy not counted)
    policy: str  # the snapshot id of the policy it was measured against
    measured_at: str

    def line(self) -> str:
        return (
            f"{_SAID[self.verdict]}: Δ {self.delta:+.1%} (95% CI {interval_text(self.ci)}, "
            f"McNemar p={self.p_value:.3g}) "
            f"on {len(self.cases)} case(s) × {self.trials}; "
            f"{figure(self.tokens_per_case, self.tokenizer)} tokens per case"
        )


class UtilityRecord(Model):
    """``.ovtui/utility.json``: the newest measurement of each experience, by name."""

    tokenizer: str = ""
    experiences: dict[str, ExperienceUtility] = Field(default_factory=dict)


def classify(
    with_it: Mapping[str, list[int]],
    without_it: Mapping[str, list[int]],
    null: PairedResult,
    k: float,
) -> tuple[Verdict, PairedResult]:
    """The verdict on one experience: the policy with it (B) against without it (A), by the paired
    rule and beyond ``null`` (the policy against itself on the same cases)."""
    result = paired(dict(without_it), dict(with_it))
    verdict: Verdict = _VERDICT_OF[beyond_null(result, null, k)]  # type: ignore[assignment]
    return verdict, result


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
        """Agent runs: the policy twice on every case (with, and the null), each ablation once."""
        return self.trials * (2 * len(self.cases) + sum(len(a.cases) for a in self.ablations))

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


def without(policy: ExperienceSet, experience: Experience) -> ExperienceSet:
    """The policy less one file (a new snapshot: nothing derived from the whole one is shared)."""
    return ExperienceSet(
        root_uri=policy.root_uri,
        policies=[e for e in policy.policies if e.uri != experience.uri],
        metadata=dict(policy.metadata),
    )


def utility_of(
    ablation: Ablation,
    runs: tuple[Mapping[str, list[int]], Mapping[str, list[int]], Mapping[str, list[int]]],
    k: float,
    tokens: int,
    policy_id: str,
    tokenizer: str = "",
) -> ExperienceUtility:
    """``runs``: with the experience, the null (with it again), without it; ``tokens`` its block's
    cost, counted by ``tokenizer``."""
    with_it, again, without_it = ({c: r[c] for c in ablation.cases if c in r} for r in runs)
    verdict, result = classify(with_it, without_it, paired(with_it, again), k)
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
        **summary.model_dump(include={"delta", "se", "ci", "p_value"}),
        tokens_per_case=tokens,
        tokenizer=tokenizer,
        calls=sum(len(t) for t in without_it.values()),
        policy=policy_id,
        measured_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def case_runs(cases: list[Case], trials: int, batch: int) -> CaseLoader:
    loader = ListCaseLoader(cases, batch)
    return RepeatedCases(loader, trials) if trials > 1 else loader


async def measure(
    plan: UtilityPlan,
    pipeline: OfflinePolicyOptimizationPipeline,
    batch: int,
    k: float,
    tokens: TokenCounter,
    save: Callable[[ExperienceUtility], Awaitable[None]],
) -> None:
    """The policy on every case, again (the null), then each ablation: each result handed to
    ``save`` as soon as it is known, so a cancelled run keeps those before it."""
    every = case_runs(plan.cases, plan.trials, batch)
    with_it = (await pipeline.eval(every, plan.policy, stage=STAGE_WITH)).report.results
    again = (await pipeline.eval(every, plan.policy, stage=STAGE_AGAIN)).report.results
    chosen = {c.name: c for c in plan.cases}
    for done, ablation in enumerate(plan.ablations, 1):
        loader = case_runs([chosen[c] for c in ablation.cases], plan.trials, batch)
        less = without(plan.policy, ablation.experience)
        without_it = (await pipeline.eval(loader, less, stage=STAGE_WITHOUT)).report.results
        cost = tokens(prompt_block(ablation.experience))
        runs = (with_it, again, without_it)
        entry = utility_of(ablation, runs, k, cost, plan.policy_id, tokens.tokenizer)
        await save(entry)
        pipeline.events.progress(
            STAGE_MEASURED, done, len(plan.ablations), name=entry.name, line=entry.line()
        )


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


# --- proposals -------------------------------------------------------------------------------------


def prune_plan(
    entries: Iterable[ExperienceUtility], policy: ExperienceSet, proposed: set[str]
) -> PolicyUpdatePlan:
    """A delete of each harmful or no-effect experience, with its paired result and cost as the
    reason; none for a file changed since it was measured or already ``proposed`` (by URI)."""
    current = {e.uri: e for e in policy.policies}
    items = [
        PolicyPlanItem(
            kind="delete",
            target_name=entry.name,
            target_uri=entry.uri,
            before_content=current[entry.uri].content,
            base_version=entry.version,
            metadata={"rationale": f"utility: {entry.line()}", "utility": entry.model_dump(mode="json")},
        )
        for entry in entries
        if entry.verdict != "helpful"
        and entry.uri in current
        and current[entry.uri].version == entry.version
        and entry.uri not in proposed
    ]
    return PolicyUpdatePlan(items=items, metadata=proposal_metadata(PLAN_SOURCE))


@dataclass
class UtilityOutcome:
    """A utility run: its report's id, what it measured (all of it, when cancelled: so far), the
    plan it parked (None: nothing to prune)."""

    run_id: str
    measured: list[ExperienceUtility]
    cancelled: bool
    plan_id: str | None = None
    failed: str | None = None
