"""Rejections hold for the rule, not the case (issue 32): ``delay_complaint``'s rule rejected from
cases 008 and 013, then training again; the same lines learned from the sibling cases (003, 018,
028) are held back with who rejected them and why, and ``--approve all`` applies none of them. With
stronger evidence (more cases than the rejected item had) the item comes back marked and waits for
a person. Real processes throughout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_support import run_ovtui
from workspace_support import build_sample_workspace

from ovtui.storage.paths import PENDING_FOLDER

REASON = "a delay is ours to answer, not a colleague's"
TASK = "delay_complaint"


def _train(root: Path, approve: str) -> str:
    proc = run_ovtui("train", str(root), "--epochs", "1", "--no-eval", "--approve", approve, cwd=root.parent)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


def _task_items(root: Path) -> list[tuple[str, int, list[str], dict[str, Any]]]:
    """(plan, item, its evidence cases, the item) for each waiting plan's delay_complaint item."""
    found = []
    for path in sorted((root / PENDING_FOLDER).glob("*.json")):
        data = json.loads(path.read_text())
        evidence = data["evidence"]
        case_of = {t["uri"]: a["rollout"]["case"]["name"] for a in evidence for t in a["trajectories"]}
        for index, item in enumerate(data["plan"]["items"]):
            if item["target_name"] == TASK:
                cases = sorted({case_of[u] for u in item["evidence_trajectory_uris"] if u in case_of})
                found.append((data["plan_id"], index, cases, {**item, "decision": data["decisions"][index]}))
    return found


def _reject_from(root: Path, cases: list[str]) -> None:
    """Reject the delay_complaint item learned from exactly ``cases``, then settle every plan."""
    items = _task_items(root)
    plan, index = next((p, i) for p, i, c, _ in items if c == cases)
    proc = run_ovtui("review", "reject", plan, str(index), "--reviewer", "ana", "--note", REASON, cwd=root)
    assert proc.returncode == 0, proc.stderr
    for waiting in {p for p, *_ in items} | {p.stem for p in (root / PENDING_FOLDER).glob("*.json")}:
        assert run_ovtui("review", "discard", waiting, cwd=root).returncode == 0


def test_a_rule_rejected_on_008_and_013_is_held_back_from_the_sibling_cases(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    _train(root, "ask")
    siblings = {c for _, _, cases, _ in _task_items(root) for c in cases} - {
        "delay_complaint_train_008",
        "delay_complaint_train_013",
    }
    assert {"delay_complaint_train_003", "delay_complaint_train_018", "delay_complaint_train_028"} <= siblings
    _reject_from(root, ["delay_complaint_train_008", "delay_complaint_train_013"])

    output = _train(root, "all")
    held = [line for line in output.splitlines() if f"held back: {TASK}: previously rejected by ana" in line]
    assert held and all(REASON in line and "not stronger evidence" in line for line in held)
    for case in ("003", "018", "028"):
        assert any(f"delay_complaint_train_{case}" in line for line in held), case
    assert not (root / f"memories/experiences/{TASK}.md").exists()  # `--approve all` applied none
    assert _task_items(root) == []  # and none waits unmarked


def test_stronger_evidence_comes_back_marked_and_waits_for_a_person(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    _train(root, "ask")
    _reject_from(root, ["delay_complaint_train_003"])  # one case: two cases are stronger evidence

    _train(root, "all")
    back = _task_items(root)
    assert back, "the rule learned from two cases comes back"
    for plan, index, cases, item in back:
        assert len(cases) > 1
        mark = item["metadata"]["previously_rejected"]
        assert mark["line"] == f"previously rejected by ana: {REASON}"
        assert mark["rejected_cases"] == ["delay_complaint_train_003"] and mark["evidence_cases"] == cases
        decision = item["decision"]
        assert decision["decision"] == "pending"
        assert decision["note"].startswith(f"held: previously rejected by ana: {REASON}")
        shown = run_ovtui("review", "show", plan, str(index), cwd=root)
        assert f"REJECTED  previously rejected by ana: {REASON} (plan " in shown.stdout
    assert not (root / f"memories/experiences/{TASK}.md").exists()
