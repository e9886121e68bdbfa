"""Runs that measure policies rather than train them: ``compare`` (B against A, and A against
itself beside it), ``utility`` (each experience left out in turn), ``drift_check`` /
``revalidate`` (what changed since experiences were learned, and their cases rerun), and
``doctor`` (what the model endpoint supports).

Nothing here writes memory: a measurement ends in its report, and what it would change (an
experience to prune, one to deprecate) is parked as a plan for a person.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ovtui.core.errors import OvtuiError
from ovtui.core.splits import VALIDATION_SPLIT
from ovtui.wiring.services.run_frame import BATCH, RunFrame, all_cases

if TYPE_CHECKING:
    from ovtui.core.domain import Experience
    from ovtui.core.events import Listener
    from ovtui.core.interfaces import CaseLoader
    from ovtui.llm.capabilities import Capabilities
    from ovtui.llm.tokens import TokenCounter
    from ovtui.memory.policy_at import NamedPolicy
    from ovtui.train.reports import RunReport
    from ovtui.train.revalidation import DriftCheck, Revalidation, Setup
    from ovtui.train.utility import UtilityOutcome, UtilityPlan, UtilityRecord
    from ovtui.wiring.composition import Composition
    from ovtui.wiring.services.reading import Reading


@dataclass
class CompareOptions:
    """``ovtui compare A B``: each policy ``current``, a history record (the policy right after
    it) or a folder of experience files, run on ``split`` with ``trials`` runs of each case."""

    a: str
    b: str
    dataset: str | None = None
    split: str = VALIDATION_SPLIT
    trials: int | None = None  # None = [trainer] eval_trials
    unseal: bool = False


@dataclass
class UtilityOptions:
    """``ovtui utility``: the experiences named, else the ``top`` most used, else all, each
    measured on its cases of ``split`` with ``trials`` runs of each."""

    dataset: str | None = None
    split: str = "train"
    experiences: list[str] = field(default_factory=list)
    top: int | None = None
    trials: int | None = None  # None = [trainer] eval_trials


@dataclass(frozen=True)
class EndpointReport:
    """What ``doctor`` found the ``[llm]`` endpoint to support, and where it was recorded."""

    base_url: str
    model: str
    capabilities: Capabilities
    context_window: int
    window_source: str
    recorded_in: str


class Measures:
    def __init__(self, parts: Composition, frame: RunFrame, reading: Reading) -> None:
        self.parts = parts
        self.frame = frame
        self.reading = reading
        self.config = parts.config

    async def compare(
        self,
        options: CompareOptions,
        listeners: list[Listener] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunReport:
        """B against A on the same cases, trials and order, and A against itself (the A/A null)
        beside it: the paired delta by the case, its interval and p (``ovtui.train.inference``), the flips
        both ways with what each agent did, and the verdict. Nothing is written but
        the run's report; outcomes are not linked in the use ledger (these are not the workspace's
        policies)."""
        from ovtui.train.comparison import STAGE_A, STAGE_AA, STAGE_B, comparison

        parts, frame = self.parts, self.frame
        dataset = options.dataset or self.config.trainer.dataset
        trials = frame.trials(options.trials)
        current = await parts.loader.load()

        def policies() -> tuple[NamedPolicy, NamedPolicy]:
            return self.reading.policy(options.a, current), self.reading.policy(options.b, current)

        a, b = await asyncio.to_thread(policies)  # a name that is no policy counts no scoring
        sealed = await frame.sealed(dataset, options.split, options.unseal)
        async with frame.open("compare", dataset, listeners, cancel) as (report, run):
            report.sealed, report.split = sealed, options.split
            batch = self.config.trainer.batch_size
            cases = await asyncio.to_thread(parts.eval_cases, dataset, options.split, batch, trials)
            pipeline = parts.pipeline(None, run, dataset, report, record_outcomes=False)
            frame.started(run, report, a=a.label, b=b.label, split=options.split, trials=trials)
            for stage, policy in ((STAGE_A, a), (STAGE_B, b), (STAGE_AA, a)):
                report.stages.append((await pipeline.eval(cases, policy.policy_set, stage=stage)).report)
            first, second, again = report.stages
            report.comparison = comparison(
                (a.label, b.label),
                options.split,
                trials,
                (first.results, second.results, again.results),
                (first.evidence, second.evidence),
            )
        return report

    async def utility_plan(self, options: UtilityOptions) -> UtilityPlan:
        """Which experiences a utility run measures, on which cases, and its agent runs: nothing
        is run. Cases: those each experience was served for (the ledger's results, by their
        trajectories) and learned from (its links), as far as ``split`` holds them."""
        from ovtui.train.components.snapshotter import ContentHashPolicySnapshotter
        from ovtui.train.utility import choose, plan_ablations

        parts = self.parts
        dataset = options.dataset or self.config.trainer.dataset
        trials = self.frame.trials(options.trials)
        if options.top is not None and options.top < 1:
            raise OvtuiError(f"--top must be at least 1 (got {options.top})")
        if options.split in self.config.evaluation.sealed:  # ablations are tuning: never on a sealed split
            raise OvtuiError(
                f"split {options.split!r} is sealed ([evaluation] sealed): utility never scores it "
                "(--split names another)"
            )
        policy = await parts.loader.load()
        loader = await asyncio.to_thread(parts.case_loader, dataset, options.split, BATCH)
        split_cases = await all_cases(loader)

        def planned() -> UtilityPlan:
            uses = {uri: usage.count for uri, usage in parts.ledger().usage().items()}
            chosen = choose(policy, options.experiences, options.top, uses)
            policy_id = ContentHashPolicySnapshotter().snapshot_id(policy)
            where = (dataset, options.split, trials)
            return plan_ablations(policy, policy_id, chosen, self._utility_cases, split_cases, where)

        return await asyncio.to_thread(planned)

    def _utility_cases(self, experience: Experience) -> set[str]:
        """The cases an experience was learned from (its links) and fed (the trajectories of its
        results in the ledger)."""
        from ovtui.train.revalidation import linked_cases, trajectory_cases

        store = self.parts.store
        fed = [result.trajectory for result in self.parts.ledger().fed(experience.uri) if result.trajectory]
        return {*linked_cases(store, experience), *trajectory_cases(store, fed)}

    async def utility(
        self,
        plan: UtilityPlan,
        listeners: list[Listener] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        tokens: TokenCounter | None = None,
    ) -> UtilityOutcome:
        """Run ``plan``: each result saved in ``.ovtui/utility.json`` as it comes (a cancelled run
        keeps them), corrected together at the end; then the harmful and no-effect ones, their
        deletions checked together (``ovtui.train.pruning``), parked as one delete plan for review.
        Outcomes are not linked in the use ledger (the ablated policies are not the workspace's).
        ``tokens`` counts each experience's cost (default: the workspace's token counter)."""
        from ovtui.train.pruning import PruneCheck, candidates, check_together, prune_plan
        from ovtui.train.review.plans import ItemDecision
        from ovtui.train.utility import PLAN_SOURCE, ExperienceUtility, UtilityOutcome, measure, save_utility

        parts, frame = self.parts, self.frame
        outcome = UtilityOutcome(run_id="", measured=[], cancelled=False)
        counter = tokens or await parts.token_counter()

        def waiting() -> set[str]:
            plans = [p for p in parts.pending.list() if p.plan.metadata.get("source") == PLAN_SOURCE]
            return {item.target_uri or "" for p in plans for item in p.plan.items}

        check = PruneCheck()

        async with frame.open("utility", plan.dataset, listeners, cancel) as (report, run):

            async def save(entry: ExperienceUtility) -> None:
                await asyncio.to_thread(save_utility, parts.paths, parts.store.lock, entry, counter.tokenizer)
                # An entry comes again once corrected together with the others: the latest stands.
                outcome.measured = [e for e in outcome.measured if e.name != entry.name] + [entry]
                report.utility = [e.model_dump(mode="json") for e in outcome.measured]  # the run's page

            outcome.run_id = report.run_id
            pipeline = parts.pipeline(None, run, plan.dataset, report, record_outcomes=False)
            frame.started(run, report, split=plan.split, trials=plan.trials, experiences=len(plan.ablations))
            report.split = plan.split
            batch = self.config.trainer.batch_size
            with_it = await measure(plan, pipeline, batch, counter, save)
            chosen = candidates(outcome.measured, plan.policy, await asyncio.to_thread(waiting))
            if chosen:
                check = await check_together(plan, pipeline, batch, with_it, chosen)
        outcome.cancelled, outcome.failed = report.cancelled, report.failed
        outcome.checked = check.line() if check.deleted else ""
        outcome.kept, outcome.checked_calls = [k.line() for k in check.kept], check.calls

        def propose() -> str | None:
            if not check.deleted or outcome.cancelled or outcome.failed:
                return None
            prune = prune_plan(check, plan.policy)
            decisions = [ItemDecision(item=i) for i in range(len(prune.items))]
            return parts.pending.park(prune, decisions, run_id=outcome.run_id).plan_id

        outcome.plan_id = await asyncio.to_thread(propose)
        return outcome

    def propose_adherence(self) -> str | None:
        """Park one plan for review that makes each ignored experience followable and revises each
        that misleads (``train.adherence.proposals``); its id, None when nothing is to propose.
        File work: call it in a thread."""
        from ovtui.train.adherence.proposals import PLAN_SOURCE, adherence_plan
        from ovtui.train.review.plans import ItemDecision

        pending = self.parts.pending
        waiting = [p for p in pending.list() if p.plan.metadata.get("source") == PLAN_SOURCE]
        proposed = {item.target_uri or "" for p in waiting for item in p.plan.items}
        plan = adherence_plan(self.reading.adherence(), self.parts.loader.load_sync(), proposed)
        if not plan.items:
            return None
        decisions = [ItemDecision(item=i) for i in range(len(plan.items))]
        return pending.park(plan, decisions).plan_id

    def utility_results(self) -> UtilityRecord:
        """What ``utility`` measured, by experience name (``OvtuiError`` naming a damaged file)."""
        from ovtui.train.utility import read_utility

        return read_utility(self.parts.paths)

    async def drift_check(
        self, dataset: str | None = None, split: str = "train", *, force: bool = False
    ) -> DriftCheck:
        """What drifted since each experience was learned (``ovtui.train.revalidation``), which
        experiences are affected (every one with ``force``) and their linked cases in ``split``:
        what ``revalidate`` would rerun, before any agent is called."""
        from ovtui.train.revalidation import DriftCheck, check_drift, linked_cases, recorded_setups

        parts = self.parts
        dataset = dataset or self.config.trainer.dataset
        trials = self.config.trainer.eval_trials
        current = await parts.loader.load()
        experiences = list(current.policies)

        def read() -> tuple[dict[str, tuple[str, Setup]], dict[str, list[str]], Setup, CaseLoader]:
            recorded = recorded_setups(parts.history, [e.uri for e in experiences])
            linked = {e.uri: linked_cases(parts.store, e) for e in experiences}
            return recorded, linked, parts.setup(), parts.case_loader(dataset, split, BATCH)

        recorded, linked, now, loader = await asyncio.to_thread(read)
        names = {c.name for c in await all_cases(loader)}
        check = DriftCheck(dataset=dataset, split=split, trials=trials, setup=now, forced=force)
        return check_drift(check, experiences, recorded, linked, names)

    async def revalidate(
        self,
        check: DriftCheck,
        listeners: list[Listener] | None = None,
        cancel: asyncio.Event | None = None,
    ) -> Revalidation:
        """Rerun the linked cases of ``check``'s affected experiences with the setup of now, and
        park each experience one of whose cases now fails as a stale item of one plan in Review
        (it proposes to deprecate it; nothing is written without a person). Nothing affected:
        nothing is run."""
        from ovtui.train.components.case_loader import ListCaseLoader
        from ovtui.train.components.trials import RepeatedCases
        from ovtui.train.drift_judgement import before_drift, judge
        from ovtui.train.revalidation import Revalidation, stale_plan, trajectory_cases
        from ovtui.train.review.plans import ItemDecision

        parts, frame = self.parts, self.frame
        result = Revalidation(check=check)
        if not check.cases:
            return result
        wanted = set(check.cases)
        async with frame.open("revalidate", check.dataset, listeners, cancel) as (report, run):
            result.run_id = report.run_id
            batch = self.config.trainer.batch_size
            split = await all_cases(parts.case_loader(check.dataset, check.split, batch))
            chosen = ListCaseLoader([c for c in split if c.name in wanted], batch)
            policy_set = await parts.loader.load()
            pipeline = parts.pipeline(None, run, check.dataset, report)
            frame.started(run, report, split=check.split, trials=check.trials, drifted=len(check.drift))
            cases = RepeatedCases(chosen, check.trials) if check.trials > 1 else chosen
            stage = (await pipeline.eval(cases, policy_set, stage="revalidate")).report
            report.stages.append(stage)
            result.results = stage.results

            def before() -> dict[str, dict[str, list[int]]]:
                store, ledger = parts.store, parts.ledger()
                return {
                    a.uri: before_drift(
                        (case, f.outcome)
                        for f in ledger.fed(a.uri)
                        if f.trajectory
                        for case in trajectory_cases(store, [f.trajectory])
                    )
                    for a in check.affected
                }

            found = await asyncio.to_thread(before)
            result.stale, result.judged = judge(check, stage.results, stage.evidence, found)
            if result.stale:
                current = {e.uri: e for e in policy_set.policies}
                plan = stale_plan(result.stale, current, check.setup)
                decisions = [ItemDecision(item=i) for i in range(len(plan.items))]
                parked = await asyncio.to_thread(parts.pending.park, plan, decisions, report.run_id)
                result.plan_id = parked.plan_id
                run.events.emit("plan_pending", plan_id=parked.plan_id, items=len(plan.items), stale=True)
        return result

    async def doctor(self) -> EndpointReport:
        """Probe ``[llm]``'s endpoint afresh for what it supports and its context window, and
        record the answer in the workspace (``.ovtui/endpoints.json``) for the runs to come."""
        from ovtui.storage.paths import ENDPOINTS_FILE

        client = self.parts.llm()
        try:
            capabilities = await client.probe()
            window = await client.context_window()
        finally:
            await client.aclose()
            self.parts.forget_llm_client()
        llm = self.config.llm
        return EndpointReport(
            llm.base_url, llm.model, capabilities, window, client.window_source, ENDPOINTS_FILE
        )
