"""PolicyTrainingEngine: the analyze → estimate → plan → review → apply kernel.

Batch and streaming trainers share it. Analysis and estimation run concurrently (bounded); plan
runs outside the lock (it may call an LLM) against a snapshot; apply takes the workspace lock and
compare-and-swaps every item. Items that went stale are re-estimated and re-planned once against
the fresh policy set; what is still stale after that is left to the person as a pending plan.

An engine serves one run (its RunContext: id, events). It reads the policy set only through the
loader it is given, and knows its stages only by their Protocols.
"""

from __future__ import annotations

import asyncio

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
    ExperienceReader,
    GradientEstimator,
    PolicyOptimizer,
    PolicySetLoader,
    PolicyUpdater,
    RolloutAnalyzer,
)
from ovtui.train.review.gates.contradictions import CONTRADICTIONS, mark_contradictions
from ovtui.train.review.gates.evidence import mark_evidence
from ovtui.train.review.gates.leaks import mark_leaks
from ovtui.train.review.gates.model_contradictions import ModelContradictionCheck
from ovtui.train.review.gates.readability import unread_notes
from ovtui.train.review.gates.sanitizer import mark_plan_hazards
from ovtui.train.review.gates.validation import ValidationGate, validation_line
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision, apply_reviewed, evidence_for, stale_subplan
from ovtui.train.review.policy import ReviewPolicy


class PolicyTrainingEngine:
    def __init__(
        self,
        analyzer: RolloutAnalyzer,
        estimator: GradientEstimator,
        optimizer: PolicyOptimizer,
        updater: PolicyUpdater,
        loader: PolicySetLoader,
        *,
        review: ReviewPolicy,
        pending: PendingPlans,
        run: RunContext | None = None,
        concurrency: int = 8,
        wait_for_review: bool = False,
        gate: ValidationGate | None = None,
        reader: ExperienceReader | None = None,
        contradiction_check: ModelContradictionCheck | None = None,
    ) -> None:
        self.analyzer = analyzer
        self.estimator = estimator
        self.optimizer = optimizer
        self.updater = updater
        self.loader = loader
        self.review = review
        self.pending = pending
        self.run = run or RunContext()
        self.events = self.run.events
        self.wait_for_review = wait_for_review
        self.gate = gate
        self.reader = reader  # the agent's reading of experience lines, which Review reports (None: none)
        self.contradiction_check = contradiction_check  # the model's, on top of the offline gate (None: none)
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
        outcome = ApplyOutcome(plan=plan)
        if not plan.items:
            self.events.log("plan is empty: nothing to review")
            outcome.result = await self.updater.apply(plan, latest)
            return outcome
        await self._assess(plan, latest, analyses or [])
        review = self._current_review()
        decisions = review.decisions(plan)
        if review.asks or any(d.decision == "pending" for d in decisions):
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

    def _current_review(self) -> ReviewPolicy:
        """The review policy for this plan: a person may have changed it for the rest of the run."""
        wanted = self.run.steering.approve
        if wanted is not None and wanted != self.review.spec:
            self.review = ReviewPolicy(wanted)
            self.events.log(f"review policy for the rest of this run: {self.review.spec}")
        return self.review

    async def _assess(
        self, plan: PolicyUpdatePlan, policy_set: ExperienceSet, analyses: list[RolloutAnalysis]
    ) -> None:
        """What the plan will do, written into it for the review: evidence, leaks, contradictions,
        hazards, validation."""
        mark_evidence(plan, analyses)
        for item in plan.items:
            unread = unread_notes(self.reader, item.after_content or "")
            if unread:
                item.metadata["unread_lines"] = [note for _, note in unread]
        flagged = mark_leaks(plan, [a.rollout.case for a in analyses])
        if flagged:
            self.events.log(f"{flagged} item(s) carry case-specific values: held for review", level="warning")
        contradicting = mark_contradictions(plan, policy_set)
        if self.contradiction_check is not None:
            await self.contradiction_check.mark(plan, policy_set, self.events)
            contradicting = sum(bool(item.metadata.get(CONTRADICTIONS)) for item in plan.items)
        if contradicting:
            self.events.log(
                f"{contradicting} item(s) contradict another experience's rule: "
                "held for the reviewer to choose which stands",
                level="warning",
            )
        hazardous = mark_plan_hazards(plan)
        if hazardous:
            self.events.log(
                f"{hazardous} item(s) carry hidden characters, injected instructions, tool-call markup, "
                "secrets or personal data: held for review",
                level="warning",
            )
        if self.gate is not None:
            result = await self.gate.assess(plan, policy_set)
            if result:
                self.events.emit("plan_validated", line=validation_line(result), **result)

    async def _ask(
        self,
        plan: PolicyUpdatePlan,
        decisions: list[ItemDecision],
        outcome: ApplyOutcome,
        evidence: list[RolloutAnalysis],
    ) -> ApplyOutcome:
        pending = self.pending.park(plan, decisions, run_id=self.run.run_id, evidence=evidence)
        outcome.pending_id = pending.plan_id
        self.events.emit(
            "plan_pending", plan_id=pending.plan_id, items=len(plan.items), waiting=self.wait_for_review
        )
        if self.wait_for_review:
            settled = await self.pending.wait_settled(pending.plan_id)
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
        parked = self.pending.park_stale(stale_plan, self.run.run_id, sources)
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
