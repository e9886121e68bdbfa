"""The whole kernel on the sample workspace: train, eval, review policies, dry-run, stale re-plan."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from workspace_support import build_sample_workspace, kernel_of

from ovtui.core.context import ExecutionContext, RunContext
from ovtui.core.domain import ExperienceSet, PatchSemanticGradient, PolicyUpdatePlan
from ovtui.core.events import Event, EventBus
from ovtui.core.fileformat import parse_memory
from ovtui.environments.sample.generate import generate_cases, write_cases
from ovtui.storage.fsio import atomic_write_text
from ovtui.train.backends.offline import OfflinePlanMerger
from ovtui.train.components.case_loader import JsonlCaseLoader
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.policy_optimizer import PatchMergePolicyOptimizer
from ovtui.wiring.workspace import TrainOptions, Workspace


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return build_sample_workspace(tmp_path / "ws")


def _experience_texts(root: Path) -> dict[str, str]:
    return {
        p.name: p.read_text(encoding="utf-8") for p in sorted((root / "memories/experiences").glob("*.md"))
    }


async def test_training_improves_held_out_and_new_cases(sample: Path) -> None:
    # New cases of the same intents, from another seed: the learning must carry over to them.
    write_cases(sample / "datasets/fresh/test.jsonl", generate_cases("test", 12, seed=4242))
    workspace = Workspace(sample)
    # A test split is sealed: scored on request only, and each scoring counted.
    before = await workspace.runs.evaluate(dataset="fresh", split="test", unseal=True)
    assert before.sealed == {"fresh/test": 1}

    report = await workspace.runs.train(TrainOptions(epochs=3, approve="all"))

    baseline, final = report.stage("baseline_eval"), report.stage("final_eval")
    assert baseline is not None and final is not None
    assert baseline.accuracy <= 0.40 and final.accuracy >= 0.80, report.summary()
    assert report.errors == []
    after = await workspace.runs.evaluate(dataset="fresh", split="test", unseal=True)
    assert after.sealed == {"fresh/test": 2}
    assert before.stages[0].accuracy <= 0.40 and after.stages[0].accuracy >= 0.80

    saved = json.loads((sample / "runs" / report.run_id / "report.json").read_text())
    assert saved["stages"][0]["stage"] == "baseline_eval"
    kinds = {json.loads(line)["kind"] for line in (sample / "runs" / report.run_id / "events.jsonl").open()}
    assert {"run_started", "progress", "eval", "plan_applied", "run_finished"} <= kinds

    case_ids = {
        c["input"]["user_query"] for c in map(json.loads, (sample / "datasets/support/train.jsonl").open())
    }
    ids = {
        tok for q in case_ids for tok in re.findall(r"\b[A-Z0-9]{6}\b", q) if any(ch.isdigit() for ch in tok)
    }
    for name, text in _experience_texts(sample).items():
        memory = parse_memory(text, source=name)
        assert [h for h in ("## Situation", "## Approach", "## Reflect") if h in memory.content] == [
            "## Situation",
            "## Approach",
            "## Reflect",
        ], name
        assert not any(i in memory.content for i in ids), f"{name} mentions a case id"


async def test_ask_policy_parks_plans_and_writes_nothing(sample: Path) -> None:
    before = _experience_texts(sample)
    workspace = Workspace(sample)
    report = await workspace.runs.train(TrainOptions(epochs=1, approve="ask", eval_split=None, limit=8))
    assert report.pending_plans and _experience_texts(sample) == before
    [pending] = workspace.review.pending_plans()
    assert pending.undecided == len(pending.plan.items) > 0

    # A restart still has the plan; approving it and applying goes through the normal path.
    again = Workspace(sample)
    again.review.decide_all(pending.plan_id, "approved", note="reviewed")
    result = await again.review.apply_pending(pending.plan_id)
    assert result.written_uris and not result.errors
    assert _experience_texts(sample) != before
    assert again.review.pending_plans() == []


async def test_dry_run_writes_records_but_no_memory(sample: Path) -> None:
    before = _experience_texts(sample)
    report = await Workspace(sample).runs.train(
        TrainOptions(epochs=1, approve="all", dry_run=True, eval_split=None)
    )
    assert _experience_texts(sample) == before
    assert report.history_ids
    record = json.loads(
        next((sample / "history").glob(f"{report.history_ids[0]}*/memory_diff.json")).read_text()
    )
    assert record["review"]["dry_run"] is True


class InterferingOptimizer(PatchMergePolicyOptimizer):
    """Plans, then lets a person edit a target file before the apply (a real concurrent change)."""

    def __init__(self, *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.edits = 0

    async def plan(
        self, gradients: list[PatchSemanticGradient], policy_set: ExperienceSet
    ) -> PolicyUpdatePlan:
        plan = await super().plan(gradients, policy_set)
        existing = [i for i in plan.items if i.before_content is not None]
        if existing and self.edits == 0:
            self.edits += 1
            target = self.store.paths.path_for(existing[0].target_uri or "")
            memory = self.store.read(target)
            memory.content += "\n- ALWAYS greet the customer by name (added by hand)"
            memory.fields["version"] = memory.version + 1
            atomic_write_text(target, memory.render(), root=self.store.paths.root)
        return plan


async def test_stale_items_are_replanned_once_and_keep_the_concurrent_edit(sample: Path) -> None:
    workspace = Workspace(sample)
    seen: list[Event] = []
    run = RunContext(events=EventBus([seen.append]))
    kernel = kernel_of(workspace)
    engine = kernel.engine(run, approve="all", dry_run=False, wait_for_review=False)
    interfering = InterferingOptimizer(kernel.store, OfflinePlanMerger())
    engine.optimizer = interfering
    executor = kernel.executor()
    policy = ExperienceSetLoader(kernel.store).load_sync()

    # Train twice so the second plan edits files that exist (the edit happens between plan and apply).
    cases = JsonlCaseLoader(kernel.paths, "support", "train").cases[:10]
    for _ in range(2):
        rollouts = await executor.execute(cases, policy, ExecutionContext("snap"))
        estimated = await engine.analyze_and_estimate(rollouts, policy)
        outcome = await engine.plan_and_apply(estimated.gradients, policy, analyses=estimated.analyses)
        policy = await kernel.loader.load(previous=policy)
    assert interfering.edits == 1
    hand_edited = [t for t in _experience_texts(sample).values() if "added by hand" in t]
    assert len(hand_edited) == 1, "the concurrent edit was lost"
    assert outcome.result is not None and outcome.result.stale_items, (
        "the edit should have made an item stale"
    )
    logs = [e.data["message"] for e in seen if e.kind == "log"]
    assert any("re-planning once" in m for m in logs)
    assert outcome.errors == [], "the re-plan should have applied cleanly"
