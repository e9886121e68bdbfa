"""Issue #12 items 3–5: a plan is run on held-out cases before it is applied (in an overlay that never
touches the workspace); the gate applies a plan that makes validation better by the paired rule
(Δ > k·SE) and parks one that does not; each item lists its evidence and counter-evidence; an item
carrying a case's values is held."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from repo_paths import FIXTURES
from workspace_support import build_sample_workspace, kernel_of

from ovtui.core.domain import Case, PolicyPlanItem, PolicyUpdatePlan
from ovtui.environments.sample import SampleAgentExecutor
from ovtui.environments.sample.criteria import forbidden_call
from ovtui.environments.sample.generate import read_cases, write_cases
from ovtui.environments.sample.slip import Slips
from ovtui.memory.store import MemoryStore
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.review.gates.leaks import mark_leaks
from ovtui.train.review.gates.validation import (
    ValidationGate,
    overlay,
    split_validation,
    validation_line,
)
from ovtui.train.review.policy import ReviewPolicy
from ovtui.wiring.workspace import TrainOptions, Workspace

PLAIN = FIXTURES / "plain_english"


def tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def experiences(root: Path) -> dict[str, str]:
    return {
        p.name: p.read_text(encoding="utf-8") for p in sorted((root / "memories/experiences").glob("*.md"))
    }


def learn_cancellations() -> PolicyPlanItem:
    """The plain-English cancellation experience the sample agent follows, as a plan item."""
    return PolicyPlanItem(
        kind="upsert",
        target_name="booking_cancellation",
        after_content=(PLAIN / "booking_cancellation.md").read_text(encoding="utf-8"),
    )


async def test_the_overlay_never_touches_the_workspace(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    policy_set = ExperienceSetLoader(MemoryStore.open(root)).load_sync()
    cases = read_cases(root / "datasets/support/test.jsonl")
    plan = PolicyUpdatePlan(
        items=[
            learn_cancellations(),
            PolicyPlanItem(kind="delete", target_name="seat_selection"),
        ]
    )
    before = tree(root)
    result = await ValidationGate(cases, SampleAgentExecutor()).assess(plan, policy_set)
    assert tree(root) == before
    gained = [c.name for c in cases if c.task_signature == "booking_cancellation"]
    assert result["before"] == 0 and result["after"] == len(gained) and result["gained"] == gained
    assert (
        validation_line(result)
        == f"validation 0/{len(cases)} → {len(gained)}/{len(cases)}, flips +{len(gained)} −0"
    )
    assert plan.items[0].metadata["validation"]["gained"] == gained
    assert plan.items[1].metadata["validation"]["gained"] == []
    flipped = result["flipped"][gained[0]]
    assert flipped["before"].startswith("failed: ") and flipped["after"].startswith("passed: get_")


def test_a_validation_share_is_stable_and_held_out(tmp_path: Path) -> None:
    cases = read_cases(build_sample_workspace(tmp_path / "ws") / "datasets/support/train.jsonl")
    train, validation = split_validation(cases, 0.2)
    assert validation and len(train) + len(validation) == len(cases)
    assert not {c.name for c in train} & {c.name for c in validation}
    assert split_validation(list(reversed(cases)), 0.2)[1] == list(reversed(validation))


def _trap(cases: list[Case]) -> list[Case]:
    """The same situations with a sloppy rubric that punishes the confirmation message."""
    trap = [forbidden_call("no_message", "whatever", "send_confirmation")]
    return [
        c.model_copy(
            update={"name": f"trap_{c.name}", "rubric": c.rubric.model_copy(update={"criteria": trap})}
        )
        for c in cases
    ]


async def test_the_gate_applies_an_improving_plan_and_parks_a_worsening_one(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "ovtui.toml").write_text('[review]\npolicy = "gate"\n', encoding="utf-8")
    held_out = read_cases(root / "datasets/support/test.jsonl")
    write_cases(root / "datasets/support/validation.jsonl", held_out)
    workspace = Workspace(root)

    improving = await workspace.runs.train(TrainOptions(epochs=1, eval_split=None))
    assert improving.history_ids, improving.summary()
    diffs = [
        json.loads((root / "history").glob(f"*{h}*/memory_diff.json").__next__().read_text())
        for h in improving.history_ids
    ]
    notes = [d["note"] for diff in diffs for d in diff["review"]["decisions"]]
    assert any(n.startswith("auto: gate (validation 0/") for n in notes), notes
    learned = experiences(root)
    assert "booking_cancellation.md" in learned

    cancellations = [c for c in held_out if c.task_signature == "booking_cancellation"]
    write_cases(root / "datasets/trap/train.jsonl", _trap(cancellations))
    write_cases(root / "datasets/trap/validation.jsonl", held_out)
    worsening = await workspace.runs.train(TrainOptions(dataset="trap", epochs=1, eval_split=None))
    assert worsening.pending_plans and not worsening.history_ids, worsening.summary()
    assert experiences(root) == learned  # nothing of the worsening plan was applied
    [pending] = [workspace.review.pending_plan(p) for p in worsening.pending_plans]
    validation = pending.plan.metadata["validation"]
    assert validation["after"] < validation["before"] and validation["lost"]
    assert all(d.decision == "pending" and d.note.startswith("held: validation ") for d in pending.decisions)


def test_the_gate_approves_only_a_gain_by_the_case() -> None:
    plan = PolicyUpdatePlan(items=[PolicyPlanItem(kind="upsert", target_name="x", after_content="- a\n")])
    # Five gained of twenty, none lost: the sign test's p = 2·½⁵ = .0625, and five informative cases
    # are fewer than a verdict needs.
    gained = [f"c{i}" for i in range(5)]
    plan.metadata["validation"] = {"before": 5, "after": 10, "cases": 20, "gained": gained, "lost": []}
    [held] = ReviewPolicy("gate").decisions(plan)
    assert held.decision == "pending"
    assert held.note.startswith("held: validation 5/20 → 10/20, flips +5 −0: no gain by the case (Δ +25.0%")
    assert "p=0.0625" in held.note and "a verdict needs at least 6" in held.note
    # Six gained: p = .031, the interval above 0: approved.
    plan.metadata["validation"] = {
        "before": 5,
        "after": 11,
        "cases": 20,
        "gained": [*gained, "c5"],
        "lost": [],
    }
    [approved] = ReviewPolicy("gate").decisions(plan)
    assert approved.decision == "approved" and approved.note.startswith("auto: gate (validation 5/20 → 11/20")
    # The A/A null from the rerun: a still agent moves nothing; one that moves itself is unstable.
    plan.metadata["validation"]["null"] = {"gained": [], "lost": []}
    [still] = ReviewPolicy("gate").decisions(plan)
    assert still.decision == "approved" and "A/A rerun moved 0 case(s)" in still.note
    plan.metadata["validation"]["null"] = {"gained": [f"n{i}" for i in range(8)], "lost": []}
    [restless] = ReviewPolicy("gate").decisions(plan)
    assert restless.decision == "pending" and restless.note.endswith("unstable")
    # Validation that does not drop is no longer enough: nothing gained, nothing approved.
    plan.metadata["validation"] = {"before": 5, "after": 5, "cases": 10, "gained": [], "lost": []}
    assert [d.decision for d in ReviewPolicy("gate").decisions(plan)] == ["pending"]


def test_an_item_carrying_a_case_id_is_flagged_and_never_approved_automatically(tmp_path: Path) -> None:
    cases = read_cases(build_sample_workspace(tmp_path / "ws") / "datasets/support/train.jsonl")
    case = cases[0]
    reservation = next(iter(case.input["db"]["reservations"]))
    email = next(iter(case.input["db"]["customers"].values()))["email"]
    plan = PolicyUpdatePlan(
        items=[
            PolicyPlanItem(
                kind="upsert",
                target_name="booking_cancellation",
                before_content="## Situation\n- cancel\n",
                after_content=f"## Situation\n- cancel\n## Reflect\n- ALWAYS check {reservation} first\n",
            ),
            PolicyPlanItem(
                kind="upsert",
                target_name="email_update",
                after_content=f"## Reflect\n- write to {email} when done\n",
            ),
            PolicyPlanItem(
                kind="upsert",
                target_name="refund_request",
                after_content="## Reflect\n- ALWAYS call get_reservation before refund_payment\n",
            ),
        ]
    )
    assert mark_leaks(plan, cases) == 2
    assert plan.items[0].metadata["leaks"] == [reservation]
    assert plan.items[1].metadata["leaks"] == [email]
    for spec in ("all", "confidence>=0", "gate"):
        plan.metadata["validation"] = {
            "before": 0,
            "after": 6,
            "cases": 6,
            "gained": list("uvwxyz"),
            "lost": [],
        }
        decisions = ReviewPolicy(spec).decisions(plan)
        assert [d.decision for d in decisions] == ["pending", "pending", "approved"], spec
        assert decisions[0].note == f"held: carries case-specific values {reservation}"


async def test_items_list_their_evidence_and_what_they_might_break(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    workspace = Workspace(root)
    report = await workspace.runs.train(TrainOptions(epochs=1, approve="ask", eval_split=None, limit=8))
    [first, *_] = [workspace.review.pending_plan(p) for p in report.pending_plans]
    for item in first.plan.items:
        assert item.metadata["evidence"], item.target_name
        assert set(item.metadata["evidence"]) <= set(item.evidence_trajectory_uris)
        assert not set(item.metadata["counter_evidence"]) & set(item.metadata["evidence"])


async def test_a_validation_share_of_the_train_split_feeds_the_gate_and_the_runs_figures(
    tmp_path: Path,
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "datasets/support/validation.jsonl").unlink()  # a dataset that brings no validation split
    (root / "ovtui.toml").write_text(
        '[trainer]\nvalidation = 0.2\n[review]\npolicy = "gate"\n', encoding="utf-8"
    )
    train = read_cases(root / "datasets/support/train.jsonl")
    held_out = split_validation(train, 0.2)[1]
    report = await Workspace(root).runs.train(TrainOptions(epochs=1))
    # The before/after figures score the same held-out share the gate runs, never a trained-on case.
    for name in ("baseline_eval", "final_eval"):
        stage = report.stage(name)
        assert stage is not None and set(stage.results) == {c.name for c in held_out}, name
    progress = [json.loads(line) for line in (root / "runs" / report.run_id / "events.jsonl").open()]
    validated = [e for e in progress if e["kind"] == "plan_validated"]
    assert validated and all(e["data"]["cases"] == len(held_out) for e in validated), validated[:1]
    trained_on = [
        e["data"]["total"]
        for e in progress
        if e["kind"] == "progress" and e["data"].get("stage") == "train_rollouts"
    ]
    assert trained_on and max(trained_on) == len(train) - len(held_out)


def test_streaming_validates_against_the_dataset_too(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    held_out = read_cases(root / "datasets/support/test.jsonl")[:4]
    (root / "datasets/support/validation.jsonl").unlink()
    assert kernel_of(Workspace(root)).stream_validation() == []  # nothing configured: the gate will park
    write_cases(root / "datasets/support/validation.jsonl", held_out)
    assert kernel_of(Workspace(root)).stream_validation() == held_out


async def test_the_a_a_null_counts_a_case_any_rerun_moved(tmp_path: Path) -> None:
    """#31: the gate's null comes from as many reruns as an eval runs trials, each drawn anew by a
    sampling agent; a case that moved in any of them is counted once."""
    root = build_sample_workspace(tmp_path / "ws")
    policy_set = ExperienceSetLoader(MemoryStore.open(root)).load_sync()
    cases = read_cases(root / "datasets/support/validation.jsonl")

    # The policy as it is already handles cancellations, so a slip (forgetting it) fails a case.
    learned = overlay(policy_set, [learn_cancellations()])
    other = PolicyUpdatePlan(items=[PolicyPlanItem(kind="delete", target_name="seat_selection")])

    async def null_of(reruns: int) -> dict[str, list[str]]:
        slipping = SampleAgentExecutor(slips=Slips(0.5, seed=3))
        result = await ValidationGate(cases, slipping, reruns=reruns).assess(other, learned)
        null: dict[str, list[str]] = result["null"]
        assert null["reruns"] == reruns  # type: ignore[comparison-overlap]
        return null

    once, thrice = await null_of(1), await null_of(3)
    moved_once = {*once["gained"], *once["lost"]}
    moved_thrice = {*thrice["gained"], *thrice["lost"]}
    assert moved_once <= moved_thrice and len(moved_thrice) > len(moved_once)
    deterministic = await ValidationGate(cases, SampleAgentExecutor(), reruns=3).assess(other, learned)
    assert deterministic["null"] == {"gained": [], "lost": [], "reruns": 3}
