"""PolicyTrainingEngine: the analyze → estimate → plan → review → apply kernel.

Batch and streaming trainers share it. Analysis and estimation run concurrently (bounded); plan
runs outside the lock (it may call an LLM) against a snapshot; apply takes the workspace lock and
compare-and-swaps every item. Items that went stale are re-estimated and re-planned once against
the fresh policy set; what is still stale after that is left to the person as a pending plan.

An engine serves one run (its RunContext: id, events). It reads the policy set only through the
loader it is given, and knows its stages, the gates a plan passes and the review only by their
Protocols (``ovtui.core.interfaces``, ``ovtui.train.review.interfaces``): the builder
(``ovtui.wiring.composition``) chooses what stands behind them.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from ovtui.core.context import RunContext
from ovtui.core.domain import (
    ExperienceSet,
    PatchSemanticGradient,
    PolicyApplyResult,
    PolicyUpdatePlan,
    Rollout,
    RolloutAnalysis,
)
from ovtui.core.errors import OvtuiError
from ovtui.core.interfaces import (
    ApplyOutcome,
    EstimateOutcome,
    PlanGates,
    PolicySetLoader,
    TrainingStages,
)
from ovtui.train.review.interfaces import PlanDecider, Review
from ovtui.train.review.plans import ItemDecision, apply_reviewed, evidence_for, stale_subplan


class PolicyTrainingEngine:
    def __init__(
        self,
        stages: TrainingStages,
        loader: PolicySetLoader,
        *,
        review: Review,
        gates: PlanGates,
        run: RunContext | None = None,
        concurrency: int = 8,
    ) -> None:
        # Each stage is an attribute of its own: a re-plan drives the optimizer alone
        # (``ReplanningEngine``), and a session's training the analyzer.
        self.analyzer = stages.analyzer
        self.estimator = stages.estimator
        self.optimizer = stages.optimizer
        self.updater = stages.updater
        self.loader = loader
        self.review = review
        self.gates = gates
        self.run = run or RunContext()
        self.events = self.run.events
        self._limit = asyncio.Semaphore(concurrency)
        self.counts = {"rollouts": 0, "trajectories": 0, "gradients": 0, "plans": 0}

    # --- analyze + estimate -------------------------------------------------------------------
    async def analyze_and_estimate(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> EstimateOutcome:
        # One outcome per rollout, merged in rollout order: whichever analysis finishes first, the
        # plan sees the same gradients in the same order, so identical runs write identical files.
        parts = [EstimateOutcome() for _ in rollouts]

        async def one(index: int, rollout: Rollout) -> None:
            part = parts[index]
            async with self._limit:
                try:
                    analysis = analyses[index] if analyses else await self.analyzer.analyze(rollout)
                    part.analyses.append(analysis)
                    self._count("trajectories", len(analysis.trajectories))
                    part.gradients = await self.estimator.estimate(analysis, policy_set)
                    self._count("gradients", len(part.gradients))
                except Exception as exc:  # one bad rollout must not sink the batch
                    message = f"rollout {rollout.case.name!r}: {type(exc).__name__}: {exc}"
                    part.errors.append(message)
                    self.events.log(message, level="error")
                finally:
                    self._count("rollouts", 1)

        await asyncio.gather(*(one(i, r) for i, r in enumerate(rollouts)))
        return EstimateOutcome(
            analyses=[a for part in parts for a in part.analyses],
            gradients=[g for part in parts for g in part.gradients],
            errors=[e for part in parts for e in part.errors],
        )

    def _count(self, stage: str, amount: int) -> None:
        self.counts[stage] += amount
        self.events.emit("counts", **self.counts)

    # --- plan + review + apply ------------------------------------------------------------------
    async def plan_and_apply(
        self,
        gradients: list[PatchSemanticGradient],
        policy_set: ExperienceSet,
        *,
        analyses: list[RolloutAnalysis] | None = None,
        replan: bool = True,
    ) -> ApplyOutcome:
        """Plan one batch and apply what the review approves. A failing batch (the model is down,
        the lock is busy) is reported in ``errors`` and writes nothing; the run goes on."""
        try:
            return await self._plan_and_apply(gradients, policy_set, analyses, replan)
        except OvtuiError as exc:
            message = f"batch of {len(gradients)} gradient(s) not applied: {exc}"
            self.events.log(message, level="error")
            return ApplyOutcome(plan=PolicyUpdatePlan(), errors=[message])

    async def _plan_and_apply(
        self,
        gradients: list[PatchSemanticGradient],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None,
        replan: bool,
    ) -> ApplyOutcome:
        latest = await self.loader.load(previous=policy_set)
        plan = await self.optimizer.plan(gradients, latest)
        self._count("plans", 1)
        for line in plan.metadata.get("held_back", []):  # what a reviewer's rejection keeps out
            self.events.log(f"held back: {line}", level="warning")
        outcome = ApplyOutcome(plan=plan)
        if not plan.items:
            self.events.log(empty_plan_line(plan))
            outcome.result = await self.updater.apply(plan, latest)
            return outcome
        await self.gates.assess(plan, latest, analyses or [], self.events)
        policy = self._current_policy()
        decisions = policy.decisions(plan)
        if policy.asks or any(d.decision == "pending" for d in decisions):
            return await self._ask(plan, decisions, outcome, evidence_for(plan, analyses))
        result, chosen = await apply_reviewed(self.updater, plan, decisions, latest)
        outcome.result = result
        # A refused item (its target cannot be written: a name that collides, a file that would be
        # unreadable) is an error of the run; a stale one is re-planned below, and counted if it stays.
        outcome.errors += [
            f"item {e.item} ({e.target}) refused: {e.message}" for e in result.item_errors if not e.stale
        ]
        self._announce(plan, result)
        stale = [chosen[i] for i in result.stale_items if i < len(chosen)]
        if stale:
            await self._handle_stale(plan, latest, stale, analyses, replan, outcome)
        return outcome

    def _current_policy(self) -> PlanDecider:
        """The review policy for this plan: a person may have changed it for the rest of the run."""
        wanted = self.run.steering.approve
        if wanted is not None and wanted != self.review.policy.spec:
            self.review = replace(self.review, policy=self.review.policy.following(wanted))
            self.events.log(f"review policy for the rest of this run: {self.review.policy.spec}")
        return self.review.policy

    async def _ask(
        self,
        plan: PolicyUpdatePlan,
        decisions: list[ItemDecision],
        outcome: ApplyOutcome,
        evidence: list[RolloutAnalysis],
    ) -> ApplyOutcome:
        parking, waiting = self.review.parking, self.review.wait_for_review
        pending = parking.park(plan, decisions, run_id=self.run.run_id, evidence=evidence)
        outcome.pending_id = pending.plan_id
        self.events.emit("plan_pending", plan_id=pending.plan_id, items=len(plan.items), waiting=waiting)
        if waiting:
            settled = await parking.wait_settled(pending.plan_id)
            self.events.emit(
                "plan_settled", plan_id=pending.plan_id, status=settled.status, history_id=settled.history_id
            )
        return outcome

    async def _handle_stale(
        self,
        plan: PolicyUpdatePlan,
        policy_set: ExperienceSet,
        stale: list[int],
        analyses: list[RolloutAnalysis] | None,
        replan: bool,
        outcome: ApplyOutcome,
    ) -> None:
        stale_plan = stale_subplan(plan, stale)
        sources = evidence_for(stale_plan, analyses)
        if replan and sources:
            self.events.log(f"{len(stale)} stale item(s): re-planning once against the current policy set")
            fresh = await self.loader.load(previous=policy_set)
            again = await self.analyze_and_estimate([a.rollout for a in sources], fresh, analyses=sources)
            retry = await self.plan_and_apply(again.gradients, fresh, analyses=sources, replan=False)
            outcome.errors.extend(retry.errors)
            return
        parked = self.review.parking.park_stale(stale_plan, self.run.run_id, sources)
        outcome.errors.append(
            f"{len(stale)} item(s) still stale after re-planning: left for review as {parked.plan_id}"
        )
        self.events.emit("plan_pending", plan_id=parked.plan_id, items=len(stale), stale=True)

    def _announce(self, plan: PolicyUpdatePlan, result: PolicyApplyResult) -> None:
        self.events.emit(
            "plan_applied",
            plan_id=plan.metadata.get("plan_id"),
            written=len(result.written_uris),
            deleted=len(result.deleted_uris),
            errors=list(result.errors),
            stale=len(result.stale_items),
            dry_run=result.dry_run,
            history_id=result.history_id,
        )


def empty_plan_line(plan: PolicyUpdatePlan) -> str:
    """Why a batch's edits came to an empty plan: counted as edits, they would otherwise seem lost."""
    edits = int(plan.metadata.get("gradients", 0))
    if not edits:
        return "plan is empty: nothing to review"
    unchanged = list(plan.metadata.get("unchanged", []))
    held_back = list(plan.metadata.get("held_back", []))
    why = []
    if unchanged:
        names = ", ".join(dict.fromkeys(unchanged))
        why.append(f"they change nothing in {names} (the experiences already say it)")
    if held_back:
        why.append(f"{len(held_back)} held back as rejected before")
    reason = "; ".join(why) or "the merge kept none of them"
    return f"plan is empty: the batch's {edits} edit(s) were dropped: {reason}. Nothing to review"
