"""PolicyTrainingEngine with fake stages (ovtui.testing.fakes) and the real gates, review and pending
plans: concurrency, order, failures, empty plans, review, stale items and failing batches."""

from __future__ import annotations

import asyncio

import pytest

from ovtui.core.context import RunContext
from ovtui.core.domain import ExperienceSet, Rollout
from ovtui.core.errors import OvtuiError
from ovtui.core.events import Event, EventBus
from ovtui.core.interfaces import TrainingStages
from ovtui.memory.store import MemoryStore
from ovtui.testing.fakes import (
    FakeAnalyzer,
    FakeEstimator,
    FakeOptimizer,
    InMemoryPolicies,
    InMemoryUpdater,
    case,
)
from ovtui.train.engine import PolicyTrainingEngine
from ovtui.train.review.gates.contradictions import ContradictionGate
from ovtui.train.review.gates.evidence import EvidenceGate
from ovtui.train.review.gates.leaks import LeakGate
from ovtui.train.review.gates.runner import GateRunner
from ovtui.train.review.gates.sanitizer import SanitizerGate
from ovtui.train.review.interfaces import Review
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.policy import ReviewPolicy

REFUND = "## Approach\n- Look the order up first"


class Harness:
    """An engine on fakes, and what the test looks at afterwards."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        review: str = "all",
        concurrency: int = 8,
        wait_for_review: bool = False,
        analyzer: FakeAnalyzer | None = None,
        estimator: FakeEstimator | None = None,
    ) -> None:
        self.policies = InMemoryPolicies({"refund": REFUND})
        self.analyzer = analyzer or FakeAnalyzer()
        self.estimator = estimator or FakeEstimator()
        self.optimizer = FakeOptimizer()
        self.updater = InMemoryUpdater(self.policies)
        self.pending = PendingPlans(store)
        self.seen: list[Event] = []
        self.engine = PolicyTrainingEngine(
            TrainingStages(self.analyzer, self.estimator, self.optimizer, self.updater),
            self.policies,
            review=Review(ReviewPolicy(review), self.pending, wait_for_review),
            # The gates a workspace without validation cases, a reading agent or a model has.
            gates=GateRunner([EvidenceGate(), LeakGate(), ContradictionGate(), SanitizerGate()]),
            run=RunContext(run_id="run1", events=EventBus([self.seen.append])),
            concurrency=concurrency,
        )

    def kinds(self, kind: str) -> list[Event]:
        return [e for e in self.seen if e.kind == kind]

    def logged(self, level: str) -> list[str]:
        return [e.data["message"] for e in self.kinds("log") if e.data["level"] == level]


def rollouts(*names: str) -> list[Rollout]:
    return [Rollout(case=case(name)) for name in names]


@pytest.fixture
def policy_set() -> ExperienceSet:
    return InMemoryPolicies({"refund": REFUND}).snapshot()


async def test_analysis_runs_at_most_concurrency_at_once(
    store: MemoryStore, policy_set: ExperienceSet
) -> None:
    harness = Harness(store, concurrency=2, analyzer=FakeAnalyzer(gated=True))
    names = [f"c{i}" for i in range(5)]
    estimating = asyncio.create_task(harness.engine.analyze_and_estimate(rollouts(*names), policy_set))
    await harness.analyzer.wait_until(lambda a: a.in_flight >= 2)
    for _ in range(20):  # yields, not waits: every other rollout gets its turn to start, and must not
        await asyncio.sleep(0)
    assert harness.analyzer.started == ["c0", "c1"]
    harness.analyzer.release(*names)
    outcome = await estimating
    assert harness.analyzer.peak == 2 and sorted(harness.analyzer.finished) == names
    assert [a.rollout.case.name for a in outcome.analyses] == names


async def test_results_come_in_rollout_order_whichever_finishes_first(
    store: MemoryStore, policy_set: ExperienceSet
) -> None:
    harness = Harness(store, analyzer=FakeAnalyzer(gated=True))
    estimating = asyncio.create_task(harness.engine.analyze_and_estimate(rollouts("a", "b", "c"), policy_set))
    await harness.analyzer.wait_until(lambda a: a.in_flight == 3)
    for name in ("c", "b", "a"):
        await harness.analyzer.finish(name)
    outcome = await estimating
    assert harness.analyzer.finished == ["c", "b", "a"]
    assert [a.rollout.case.name for a in outcome.analyses] == ["a", "b", "c"]
    assert [g.evidence_trajectory_uris for g in outcome.gradients] == [
        ["mem://trajectories/a"],
        ["mem://trajectories/b"],
        ["mem://trajectories/c"],
    ]
    assert harness.engine.counts == {"rollouts": 3, "trajectories": 3, "gradients": 3, "plans": 0}


async def test_a_failing_rollout_is_reported_and_the_batch_goes_on(
    store: MemoryStore, policy_set: ExperienceSet
) -> None:
    harness = Harness(store, analyzer=FakeAnalyzer(fail={"b"}), estimator=FakeEstimator(fail={"c"}))
    outcome = await harness.engine.analyze_and_estimate(rollouts("a", "b", "c", "d"), policy_set)
    assert [a.rollout.case.name for a in outcome.analyses] == ["a", "c", "d"]  # c was analysed, not estimated
    assert [g.rationale for g in outcome.gradients] == ["what a showed", "what d showed"]
    assert outcome.errors == [
        "rollout 'b': RuntimeError: cannot analyse b",
        "rollout 'c': RuntimeError: cannot estimate c",
    ]
    assert harness.logged("error") == outcome.errors
    assert harness.engine.counts["rollouts"] == 4


async def test_an_empty_plan_is_applied_as_nothing_and_parks_nothing(
    store: MemoryStore, policy_set: ExperienceSet
) -> None:
    harness = Harness(store, review="ask", estimator=FakeEstimator(silent={"a"}))
    estimated = await harness.engine.analyze_and_estimate(rollouts("a"), policy_set)
    outcome = await harness.engine.plan_and_apply(
        estimated.gradients, policy_set, analyses=estimated.analyses
    )
    assert not outcome.plan.items and outcome.pending_id is None and not outcome.errors
    assert outcome.result is not None and not outcome.result.written_uris
    assert [plan.items for plan, _ in harness.updater.applied] == [[]]
    assert harness.pending.list() == [] and not harness.kinds("plan_pending")
    assert "plan is empty: nothing to review" in harness.logged("info")


async def test_ask_parks_the_plan_with_its_evidence_and_writes_nothing(
    store: MemoryStore, policy_set: ExperienceSet
) -> None:
    harness = Harness(store, review="ask")
    estimated = await harness.engine.analyze_and_estimate(rollouts("a", "b"), policy_set)
    outcome = await harness.engine.plan_and_apply(
        estimated.gradients, policy_set, analyses=estimated.analyses
    )
    assert outcome.pending_id == "plan1" and outcome.result is None
    parked = harness.pending.get("plan1")
    assert [d.decision for d in parked.decisions] == ["pending", "pending"]
    assert parked.run_id == "run1"
    assert [a.rollout.case.name for a in parked.evidence] == ["a", "b"]
    assert parked.plan.items[0].metadata["evidence"] == ["mem://trajectories/a"]  # the evidence gate ran
    assert [e.data for e in harness.kinds("plan_pending")] == [
        {"plan_id": "plan1", "items": 2, "waiting": False}
    ]
    assert harness.updater.applied == []
    refund = harness.policies.get("refund")
    assert refund is not None and refund.version == 1


async def test_waiting_for_review_returns_once_the_plan_is_settled(
    store: MemoryStore, policy_set: ExperienceSet
) -> None:
    harness = Harness(store, review="ask", wait_for_review=True)
    parked = asyncio.Event()
    harness.engine.events.listeners.append(lambda e: parked.set() if e.kind == "plan_pending" else None)
    estimated = await harness.engine.analyze_and_estimate(rollouts("a"), policy_set)
    applying = asyncio.create_task(
        harness.engine.plan_and_apply(estimated.gradients, policy_set, analyses=estimated.analyses)
    )
    await parked.wait()
    for _ in range(20):  # yields: the engine gets every chance to return before the plan is settled
        await asyncio.sleep(0)
    assert not applying.done()  # parked, and waiting for the person
    harness.pending.settle(harness.pending.get("plan1"), "discarded", None)
    outcome = await applying
    assert outcome.pending_id == "plan1"
    assert [e.data for e in harness.kinds("plan_settled")] == [
        {"plan_id": "plan1", "status": "discarded", "history_id": None}
    ]


async def test_approve_all_applies_every_item(store: MemoryStore, policy_set: ExperienceSet) -> None:
    harness = Harness(store, review="all")
    estimated = await harness.engine.analyze_and_estimate(rollouts("a"), policy_set)
    outcome = await harness.engine.plan_and_apply(
        estimated.gradients, policy_set, analyses=estimated.analyses
    )
    assert outcome.result is not None and outcome.pending_id is None and not outcome.errors
    refund = harness.policies.get("refund")
    assert refund is not None and refund.version == 2 and refund.content.endswith("- learned from a")
    assert outcome.result.updated_policy_set.by_name()["refund"].version == 2
    [(applied, options)] = harness.updater.applied
    assert [item.target_name for item in applied.items] == ["refund"]
    assert options is not None and [d.decision for d in options.decisions] == ["approved"]
    assert [d.note for d in options.decisions] == ["auto: all"] and options.plan_id == "plan1"
    [event] = harness.kinds("plan_applied")
    assert event.data["plan_id"] == "plan1" and event.data["written"] == 1 and event.data["stale"] == 0
    assert harness.engine.counts["plans"] == 1 and harness.pending.list() == []


async def test_a_stale_item_is_replanned_once_against_the_fresh_set(
    store: MemoryStore, policy_set: ExperienceSet
) -> None:
    harness = Harness(store, review="all")

    def someone_edits_first(apply: int) -> None:
        """Someone else edits the experience between the first plan and its apply, and only then."""
        if apply == 1:
            harness.policies.write("refund", "- theirs")

    harness.updater.before_apply = someone_edits_first
    estimated = await harness.engine.analyze_and_estimate(rollouts("a"), policy_set)
    outcome = await harness.engine.plan_and_apply(
        estimated.gradients, policy_set, analyses=estimated.analyses
    )
    assert not outcome.errors and len(harness.optimizer.batches) == 2
    refund = harness.policies.get("refund")
    assert refund is not None and refund.content == "- theirs\n- learned from a" and refund.version == 3
    # The re-plan estimated the kept analysis again (no second analysis) against the set as it was then.
    assert harness.analyzer.started == ["a"]
    assert harness.estimator.seen[-1][1].by_name()["refund"].content == "- theirs"
    assert [e.data["stale"] for e in harness.kinds("plan_applied")] == [1, 0]
    assert harness.pending.list() == []


async def test_what_is_still_stale_after_the_replan_is_parked_for_review(
    store: MemoryStore, policy_set: ExperienceSet
) -> None:
    harness = Harness(store, review="all")

    def someone_edits_each_time(apply: int) -> None:
        harness.policies.write("refund", f"- theirs {apply}")

    harness.updater.before_apply = someone_edits_each_time
    estimated = await harness.engine.analyze_and_estimate(rollouts("a"), policy_set)
    outcome = await harness.engine.plan_and_apply(
        estimated.gradients, policy_set, analyses=estimated.analyses
    )
    assert len(harness.optimizer.batches) == 2  # re-planned once, not again
    assert outcome.errors == ["1 item(s) still stale after re-planning: left for review as plan2-stale"]
    parked = harness.pending.get("plan2-stale")
    assert parked.stale == [0] and [d.decision for d in parked.decisions] == ["pending"]
    assert parked.plan.metadata["stale_of"] == "plan2"
    assert [a.rollout.case.name for a in parked.evidence] == ["a"]
    assert harness.kinds("plan_pending")[-1].data == {"plan_id": "plan2-stale", "items": 1, "stale": True}
    refund = harness.policies.get("refund")
    assert refund is not None and refund.content == "- theirs 2"  # nothing of ours was written


async def test_a_failing_batch_is_reported_and_writes_nothing(
    store: MemoryStore, policy_set: ExperienceSet
) -> None:
    harness = Harness(store, review="all")
    harness.optimizer.fail = OvtuiError("the model is down")
    estimated = await harness.engine.analyze_and_estimate(rollouts("a", "b"), policy_set)
    outcome = await harness.engine.plan_and_apply(
        estimated.gradients, policy_set, analyses=estimated.analyses
    )
    assert outcome.errors == ["batch of 2 gradient(s) not applied: the model is down"]
    assert outcome.result is None and outcome.pending_id is None and not outcome.plan.items
    assert harness.logged("error") == outcome.errors
    assert harness.updater.applied == [] and harness.pending.list() == []
    refund = harness.policies.get("refund")
    assert refund is not None and refund.version == 1
