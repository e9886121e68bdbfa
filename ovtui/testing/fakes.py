"""In-memory fakes of the kernel's Protocols (``ovtui.core.interfaces``, and a plan's gates), for
tests of the engine, the gate runner, the pipeline and the trainers with every stage under the
test's control.

Each fake does the least its Protocol promises, honestly: ``InMemoryPolicies`` is an experiences
folder that a loader reads and an updater writes, and the updater compare-and-swaps every item
against what it was planned on (``PolicyPlanItem.base_conflict``, the product's rule), so a test
can make an item go stale by writing the file meanwhile (``InMemoryPolicies.write``). The stages
record what they were given. ``FakeAnalyzer`` can hold each analysis until the test releases it,
to see how many run at once and in which order they finish. (A ``CaseLoader`` over a list needs no
fake: the product's ``ListCaseLoader`` is one.)
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ovtui.core.context import ApplyOptions, ExecutionContext
from ovtui.core.domain import (
    Case,
    Experience,
    ExperienceSet,
    ItemError,
    Message,
    PatchSemanticGradient,
    PolicyApplyResult,
    PolicyPlanItem,
    PolicyStatus,
    PolicyUpdatePlan,
    Rollout,
    RolloutAnalysis,
    RolloutTrainingResult,
    Rubric,
    RubricEvaluation,
    TextPart,
    Trajectory,
)
from ovtui.core.errors import OvtuiError
from ovtui.core.fileformat import EXPERIENCES, MemoryFile, normalise_content
from ovtui.train.review.gates.base import GateReport, PlanToCheck

ROOT_URI = "viking://user/default/memories/experiences"


def case(name: str, task: str = "refund", query: str = "where is my refund") -> Case:
    """A case of task ``task`` (the experience the fake estimator edits) asking ``query``."""
    return Case(name=name, task_signature=task, input={"user_query": query}, rubric=Rubric(name=task))


# --- the experiences: a loader, and what an updater writes --------------------------------------


class InMemoryPolicies:
    """An experiences folder in memory (a ``PolicySetLoader``): each write makes a new version."""

    def __init__(self, experiences: dict[str, str] | None = None) -> None:
        self._by_name: dict[str, Experience] = {}
        self.loads = 0
        for name, content in (experiences or {}).items():
            self.write(name, content)

    def write(self, name: str, content: str) -> Experience:
        """Create or rewrite one experience, as the updater (or another writer meanwhile) does."""
        current = self._by_name.get(name)
        written = Experience(
            name=name,
            uri=f"{ROOT_URI}/{name}.md",
            version=1 if current is None else current.version + 1,
            status=PolicyStatus.PRODUCTION if current is None else current.status,
            content=normalise_content(content),
        )
        self._by_name[name] = written
        return written

    def remove(self, name: str) -> Experience | None:
        return self._by_name.pop(name, None)

    def get(self, name: str) -> Experience | None:
        return self._by_name.get(name)

    def snapshot(self) -> ExperienceSet:
        return ExperienceSet(root_uri=ROOT_URI, policies=sorted(self._by_name.values(), key=lambda p: p.uri))

    async def load(self, previous: ExperienceSet | None = None) -> ExperienceSet:
        self.loads += 1
        return self.snapshot()


class InMemoryUpdater:
    """A ``PolicyUpdater`` on ``InMemoryPolicies``: every item compare-and-swapped against what it was
    planned on; a stale one is reported (``ItemError.stale``) and the others are written.

    ``before_apply`` runs at the start of each apply: a test writes there what another process
    would have written between plan and apply."""

    def __init__(
        self, policies: InMemoryPolicies, *, before_apply: Callable[[int], None] | None = None
    ) -> None:
        self.policies = policies
        self.before_apply = before_apply
        self.applied: list[tuple[PolicyUpdatePlan, ApplyOptions | None]] = []

    async def apply(
        self, plan: PolicyUpdatePlan, policy_set: ExperienceSet | None, options: ApplyOptions | None = None
    ) -> PolicyApplyResult:
        self.applied.append((plan, options))
        if self.before_apply is not None:
            self.before_apply(len(self.applied))
        written: list[str] = []
        deleted: list[str] = []
        errors: list[ItemError] = []
        for index, item in enumerate(plan.items):
            current = self.policies.get(item.target_name)
            conflict = item.base_conflict(
                None if current is None else current.content,
                None if current is None else current.version,
                exists=current is not None,
            )
            if conflict is not None:
                errors.append(ItemError(item=index, target=item.target_name, message=conflict, stale=True))
            elif item.kind == "delete":
                removed = self.policies.remove(item.target_name)
                deleted += [] if removed is None else [removed.uri]
            else:
                written.append(self.policies.write(item.target_name, item.after_content or "").uri)
        return PolicyApplyResult(
            updated_policy_set=self.policies.snapshot(),
            written_uris=written,
            deleted_uris=deleted,
            errors=[f"item {e.item} ({e.target}): {e.message}" for e in errors],
            item_errors=errors,
        )


class HashSnapshotter:
    """A ``PolicySnapshotter``: an id from what the set says (names, versions, contents)."""

    async def snapshot(self, policy_set: ExperienceSet) -> str:
        digest = hashlib.sha256()
        for policy in policy_set.policies:
            digest.update(f"{policy.name}\x1f{policy.version}\x1f{policy.content}\x1e".encode())
        return f"snapshot:{digest.hexdigest()[:12]}"


# --- cases and rollouts ------------------------------------------------------------------------


class PassingEvaluator:
    """A ``RolloutEvaluator``: a rollout passes when its case is one of ``passing``."""

    def __init__(self, passing: Iterable[str] = ()) -> None:
        self.passing = set(passing)

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation:
        passed = rollout.case.name in self.passing
        return RubricEvaluation(passed=passed, score=1.0 if passed else 0.0)


@dataclass
class ExecutedBatch:
    cases: list[str]
    policy_set: ExperienceSet
    context: ExecutionContext


class ScriptedExecutor:
    """A ``RolloutExecutor``: one user message and one reply per case, graded by ``evaluator`` (none:
    ungraded); a case named in ``errors`` comes back as a failed execution carrying that error."""

    def __init__(
        self, evaluator: PassingEvaluator | None = None, errors: dict[str, str] | None = None
    ) -> None:
        self.evaluator = evaluator
        self.errors = errors or {}
        self.batches: list[ExecutedBatch] = []

    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        self.batches.append(ExecutedBatch([c.name for c in cases], policy_set, context))
        rollouts = []
        for one in cases:
            rollout = Rollout(
                case=one,
                messages=[
                    Message(role="user", parts=[TextPart(text=str(one.input.get("user_query", "")))]),
                    Message(role="assistant", parts=[TextPart(text="done")]),
                ],
                policy_snapshot_id=context.policy_snapshot_id,
            )
            if one.name in self.errors:
                rollout.metadata["execution_error"] = self.errors[one.name]
            if self.evaluator is not None:
                rollout.evaluation = await self.evaluator.evaluate(rollout)
            rollouts.append(rollout)
        return rollouts


# --- the engine's stages -----------------------------------------------------------------------


class FakeAnalyzer:
    """A ``RolloutAnalyzer``: one trajectory per rollout (``mem://trajectories/<case>``), graded by
    the rollout's own evaluation (failed without one). A case in ``fail`` raises. With ``gated``,
    each analysis waits until the test ``release``s its case; ``in_flight`` and ``peak`` say how
    many ran at once, ``finished`` in which order they ended."""

    def __init__(self, *, fail: Iterable[str] = (), gated: bool = False) -> None:
        self.fail = set(fail)
        self.gated = gated
        self.started: list[str] = []
        self.finished: list[str] = []
        self.in_flight = 0
        self.peak = 0
        self._gates: dict[str, asyncio.Event] = {}
        self._changed = asyncio.Condition()

    def _gate(self, name: str) -> asyncio.Event:
        return self._gates.setdefault(name, asyncio.Event())

    def release(self, *names: str) -> None:
        for name in names:
            self._gate(name).set()

    async def finish(self, name: str) -> None:
        """Release ``name`` and wait until its analysis has ended."""
        self.release(name)
        await self.wait_until(lambda analyzer: name in analyzer.finished)

    async def wait_until(self, condition: Callable[[FakeAnalyzer], bool]) -> None:
        """Until ``condition(self)`` holds (checked whenever an analysis starts or ends)."""
        async with self._changed:
            await self._changed.wait_for(lambda: condition(self))

    async def _note(self, change: Callable[[], None]) -> None:
        async with self._changed:
            change()
            self._changed.notify_all()

    async def analyze(self, rollout: Rollout) -> RolloutAnalysis:
        name = rollout.case.name

        def start() -> None:
            self.started.append(name)
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

        def end() -> None:
            self.in_flight -= 1
            self.finished.append(name)

        await self._note(start)
        try:
            if self.gated:
                await self._gate(name).wait()
            if name in self.fail:
                raise RuntimeError(f"cannot analyse {name}")
            evaluation = rollout.evaluation or RubricEvaluation(passed=False, score=0.0)
            trajectory = Trajectory(name=name, uri=f"mem://trajectories/{name}", content=f"what {name} did")
            return RolloutAnalysis(rollout=rollout, evaluation=evaluation, trajectories=[trajectory])
        finally:
            await self._note(end)


class FakeEstimator:
    """A ``GradientEstimator``: per trajectory, one edit of the experience named by the case's task,
    appending ``- learned from <case>`` to it as the given set holds it (a create when it has none).
    A case in ``silent`` yields no gradient; one in ``fail`` raises."""

    def __init__(self, *, silent: Iterable[str] = (), fail: Iterable[str] = ()) -> None:
        self.silent = set(silent)
        self.fail = set(fail)
        self.seen: list[tuple[str, ExperienceSet]] = []

    async def estimate(
        self, analysis: RolloutAnalysis, experience_set: ExperienceSet
    ) -> list[PatchSemanticGradient]:
        name = analysis.rollout.case.name
        self.seen.append((name, experience_set))
        if name in self.fail:
            raise RuntimeError(f"cannot estimate {name}")
        if name in self.silent:
            return []
        target = analysis.rollout.case.task_signature
        current = experience_set.by_name().get(target)
        before = (
            None if current is None else _file(current.name, current.uri, current.content, current.version)
        )
        after_text = f"{'' if current is None else current.content}\n- learned from {name}".strip()
        uri = current.uri if current is not None else f"{experience_set.root_uri}/{target}.md"
        return [
            PatchSemanticGradient(
                before_file=before,
                after_file=_file(target, uri, after_text, 1 if current is None else current.version + 1),
                base_version=None if current is None else current.version,
                rationale=f"what {name} showed",
                evidence_trajectory_uris=[t.uri for t in analysis.trajectories],
                confidence=0.9 if analysis.evaluation.passed else 0.4,
            )
            for _ in analysis.trajectories
        ]


def _file(name: str, uri: str, content: str, version: int) -> MemoryFile:
    fields = {"experience_name": name, "memory_type": EXPERIENCES, "version": version}
    return MemoryFile(uri=uri, content=content, fields=fields)


class FakeOptimizer:
    """A ``PolicyOptimizer``: one upsert per gradient, planned against the gradient's base, as plan
    ``plan<N>``; each call's gradients are kept in ``batches``. ``fail`` (an error) makes the next
    call raise it, as a model that is down does."""

    def __init__(self) -> None:
        self.batches: list[list[PatchSemanticGradient]] = []
        self.fail: OvtuiError | None = None

    async def plan(
        self, gradients: list[PatchSemanticGradient], policy_set: ExperienceSet
    ) -> PolicyUpdatePlan:
        self.batches.append(list(gradients))
        if self.fail is not None:
            raise self.fail
        items = [
            PolicyPlanItem(
                kind="upsert",
                target_name=g.target_experience_name,
                target_uri=g.target_experience_uri,
                before_content=None if g.before_file is None else g.before_file.content,
                base_version=g.base_version,
                after_content=g.after_file.content,
                confidence=g.confidence,
                evidence_trajectory_uris=list(g.evidence_trajectory_uris),
            )
            for g in gradients
        ]
        return PolicyUpdatePlan(items=items, metadata={"plan_id": f"plan{len(self.batches)}"})


# --- the gates a plan passes -------------------------------------------------------------------


@dataclass
class ScriptedGate:
    """A ``Gate`` (``ovtui.train.review.gates.base``) on ``topic`` (its name when none is given)
    that reports ``report``. As it checks, it appends its name to the plan's ``metadata["gates"]``
    (the order the gates ran in), marks every item ``metadata[name] = True`` (its finding) and,
    with ``logs``, logs that line on the run's events (what a gate says while it checks)."""

    name: str
    report: GateReport = field(default_factory=GateReport)
    topic: str = ""
    logs: str = ""

    def __post_init__(self) -> None:
        self.topic = self.topic or self.name

    async def check(self, planned: PlanToCheck) -> GateReport:
        planned.plan.metadata.setdefault("gates", []).append(self.name)
        for item in planned.plan.items:
            item.metadata[self.name] = True
        if self.logs:
            planned.events.log(self.logs)
        return self.report


# --- trainers ----------------------------------------------------------------------------------


@dataclass
class TrainedBatch:
    cases: list[str]
    policy_set: ExperienceSet


@dataclass
class RecordingTrainer:
    """A ``StreamingTrainer`` that keeps what it was given. With ``learn``, each batch writes one line
    per case into the experience ``learned`` there and returns that apply's result (a trainer that
    changed the policy); without, it returns no apply result. ``errors`` are reported per batch."""

    learn: InMemoryPolicies | None = None
    errors: list[str] = field(default_factory=list)
    batches: list[TrainedBatch] = field(default_factory=list)
    submitted: list[str] = field(default_factory=list)
    closed: bool = False

    async def train_rollouts(
        self,
        rollouts: list[Rollout],
        policy_set: ExperienceSet,
        analyses: list[RolloutAnalysis] | None = None,
    ) -> RolloutTrainingResult:
        names = [r.case.name for r in rollouts]
        self.batches.append(TrainedBatch(names, policy_set))
        result = RolloutTrainingResult(errors=list(self.errors))
        if self.learn is not None:
            current = self.learn.get("learned")
            lines = [f"- from {n}" for n in names]
            written = self.learn.write(
                "learned", "\n".join([*([] if current is None else [current.content]), *lines])
            )
            result.apply_result = PolicyApplyResult(
                updated_policy_set=self.learn.snapshot(), written_uris=[written.uri]
            )
        return result

    async def submit_rollout(
        self, rollout: Rollout, analysis: RolloutAnalysis | None = None
    ) -> RolloutTrainingResult:
        if self.closed:
            raise RuntimeError("the trainer is closed")
        self.submitted.append(rollout.case.name)
        return RolloutTrainingResult()

    async def close(self) -> None:
        self.closed = True
