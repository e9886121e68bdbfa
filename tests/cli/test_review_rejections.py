"""Rejections teach, end to end in real processes: train → a reviewer rejects every item with a
reason → train again on the same cases. The offline learner proposes none of it again: not the same
item, and not a rejected rule under other words (the same rule with other conditions)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_ovtui
from workspace_support import build_sample_workspace

from ovtui.core.decisions import PastRejection
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.store import MemoryStore
from ovtui.plugins.wording.lessons import parse_lesson
from ovtui.train.review.feedback import ReviewFeedback
from ovtui.train.review.pending import PendingPlans
from ovtui.wiring.workspace import Workspace

REASON = "we never hand out credit ourselves: a colleague decides compensation"


def waiting(root: Path) -> list[str]:
    proc = run_ovtui("review", "list", "--json", cwd=root)
    assert proc.returncode == 0, proc.stderr
    return [row["plan_id"] for row in json.loads(proc.stdout)]


def train(root: Path) -> None:
    proc = run_ovtui("train", str(root), "--epochs", "1", "--no-eval", "--approve", "ask", cwd=root.parent)
    assert proc.returncode == 0, proc.stderr


def rules(lines: tuple[str, ...] | list[str]) -> set[tuple[str, tuple[str, ...]]]:
    return {lesson.identity for line in lines if (lesson := parse_lesson(line))}


def test_rejected_items_and_rules_are_not_proposed_again_from_the_same_cases(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    train(root)
    first = waiting(root)
    assert first
    for plan_id in first:
        rejected = run_ovtui("review", "reject", plan_id, "--note", REASON, "--reviewer", "ana", cwd=root)
        assert rejected.returncode == 0, rejected.stderr
        applied = run_ovtui("review", "apply", plan_id, cwd=root)
        assert "nothing applied: no item was approved" in applied.stdout, applied.stdout
    assert waiting(root) == []

    rejections: list[PastRejection] = ReviewFeedback(root).every()
    assert (
        rejections
        and {r.note for r in rejections} == {REASON}
        and {r.reviewer for r in rejections} == {"ana"}
    )
    assert all(r.cases for r in rejections)  # each knows the cases it came from
    never_credit = ("never", ("issue_travel_credit",))
    assert any(never_credit in rules(r.lines) for r in rejections)  # the rule the reason is about

    train(root)  # the same cases again
    plans = [PendingPlans(MemoryStore.open(root)).get(p) for p in waiting(root) if p not in first]
    turned_down = {(r.target_name, r.kind, r.after) for r in rejections}
    for plan in plans:
        case_of = {t.uri: a.rollout.case.name for a in plan.evidence for t in a.trajectories}
        for item in plan.plan.items:
            assert (item.target_name, item.kind, item.after_content) not in turned_down
            # nor a rule rejected for this file from these cases, however worded now
            cases = {case_of[uri] for uri in item.evidence_trajectory_uris}
            refused = set().union(
                *(
                    rules(r.lines)
                    for r in rejections
                    if r.target_name == item.target_name and cases <= r.cases
                )
            )
            before = set((item.before_content or "").splitlines())
            added = [line for line in (item.after_content or "").splitlines() if line not in before]
            assert not rules(added) & refused, (item.target_name, rules(added) & refused)


def test_an_edit_is_what_is_applied_and_the_rule_it_took_out_is_a_correction_not_proposed_again(
    tmp_path: Path,
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    train(root)
    workspace = Workspace(root)
    plan = workspace.review.pending_plan(waiting(root)[0])
    index, item = next(
        (i, it)
        for i, it in enumerate(plan.plan.items)
        if it.kind == "upsert" and rules(_reflect(it.after_content))
    )
    dropped = _reflect(item.after_content)[0]
    edited = "\n".join(line for line in (item.after_content or "").splitlines() if line != dropped)
    workspace.review.edit_item(plan.plan_id, index, edited, reviewer="ana")
    assert run_ovtui("review", "approve", plan.plan_id, "--reviewer", "ana", cwd=root).returncode == 0
    applied = run_ovtui("review", "apply", plan.plan_id, cwd=root)
    assert applied.returncode == 0, applied.stderr
    assert (
        dropped not in (workspace.reading.memory(item.target_uri or "") or _missing()).content
    )  # the edit was applied

    [record] = json.loads(run_ovtui("history", "--json", cwd=root).stdout)
    shown = run_ovtui("history", "show", record["id"], cwd=root).stdout
    assert f"item {index} was edited by the reviewer; the learner proposed:" in shown and dropped in shown
    [correction] = [r for r in ReviewFeedback(root).every() if r.edited]
    assert correction.target_name == item.target_name and correction.lines == (dropped,)
    assert correction.reviewer == "ana" and correction.cases

    for plan_id in waiting(root):  # the other plans were made on the old files: out of the way
        run_ovtui("review", "discard", plan_id, cwd=root)
    train(root)  # the same cases, on the approved text
    for waiting_plan in (workspace.review.pending_plan(p) for p in waiting(root)):
        case_of = {t.uri: a.rollout.case.name for a in waiting_plan.evidence for t in a.trajectories}
        for again in waiting_plan.plan.items:
            cases = {case_of[uri] for uri in again.evidence_trajectory_uris}
            if again.target_name == item.target_name and cases <= correction.cases:
                assert not rules(_reflect(again.after_content)) & rules([dropped]), again.after_content


def _reflect(content: str | None) -> list[str]:
    return [line for line in (content or "").splitlines() if line.startswith(("- NEVER", "- ALWAYS"))]


def _missing() -> MemoryFile:
    raise AssertionError("the edited experience was not written")
