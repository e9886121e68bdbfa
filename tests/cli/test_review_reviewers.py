"""Who decided, and the two-person rule, through ``ovtui review`` in real processes: every decision
names its reviewer (``--reviewer``, ``[review] reviewer``, else the OS login) in the plan, the
memory_diff and History; an item of a kind in ``[review] second_approver_for`` is applied only once
two different reviewers approved it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from plan_support import append_line, delete, experience, upsert
from workspace_support import build_sample_workspace

from ovtui.core.domain import PolicyUpdatePlan
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import WorkspacePaths
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision

PLAN = "plantwopeople"


def ovtui(root: Path, *args: str, login: str = "tester") -> subprocess.CompletedProcess[str]:
    # getpass reads the login from LOGNAME first: the process's "OS login" is whatever we say here.
    env = {**os.environ, "LOGNAME": login, "USER": login, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "ovtui", *args], cwd=root, env=env, capture_output=True, text=True, timeout=240
    )


def workspace_with_plan(tmp_path: Path, review_section: str) -> tuple[Path, MemoryStore]:
    """A sample workspace whose ``[review]`` is ``review_section``, with plan PLAN waiting: item 0
    deletes pet_travel_request, item 1 adds a line to seat_selection."""
    root = build_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    config.write_text(
        config.read_text().replace('[review]\npolicy = "ask"', review_section), encoding="utf-8"
    )
    store = MemoryStore(WorkspacePaths(root, "default"))
    items = [
        delete(store, "pet_travel_request"),
        append_line(store, "seat_selection", "- Offer a window seat first."),
    ]
    plan = PolicyUpdatePlan(items=items, metadata={"plan_id": PLAN})
    PendingPlans(store).park(plan, [ItemDecision(item=i) for i in range(len(items))])
    return root, store


def test_one_reviewers_approval_of_a_delete_does_not_apply_it_two_do(tmp_path: Path) -> None:
    root, store = workspace_with_plan(tmp_path, '[review]\nsecond_approver_for = ["delete"]\npolicy = "ask"')

    first = ovtui(root, "review", "approve", PLAN, "--reviewer", "ana")
    assert first.returncode == 0, first.stderr
    assert "1 undecided (by ana)" in first.stdout
    assert "item 0: 1 of 2 approvals (ana); it needs a second reviewer's approval" in first.stdout
    shown = ovtui(root, "review", "show", PLAN).stdout
    assert "  0  pending   delete" in shown and "[1 of 2 approvals (ana)]" in shown
    assert "  1  approved  update" in shown  # an added line needs one reviewer

    refused = ovtui(root, "review", "apply", PLAN)
    assert refused.returncode == 2
    assert "item 0 (delete pet_travel_request) has 1 of 2 approvals (ana)" in refused.stderr
    assert experience(store, "pet_travel_request") is not None  # nothing applied
    assert json.loads(ovtui(root, "history", "--json").stdout) == []

    again = ovtui(root, "review", "approve", PLAN, "0", "--reviewer", "ana")  # the same person twice
    assert "item 0: 1 of 2 approvals (ana)" in again.stdout
    assert ovtui(root, "review", "apply", PLAN).returncode == 2

    second = ovtui(root, "review", "approve", PLAN, "0", "--reviewer", "ben")
    assert "0 undecided (by ben)" in second.stdout
    applied = ovtui(root, "review", "apply", PLAN)
    assert applied.returncode == 0, applied.stderr
    assert "wrote 1 and deleted 1 file(s)" in applied.stdout
    assert experience(store, "pet_travel_request") is None

    [record] = json.loads(ovtui(root, "history", "--json").stdout)
    shown = ovtui(root, "history", "show", record["id"]).stdout
    assert "decision  item 0: approved (by ana, ben)" in shown
    assert "decision  item 1: approved (by ana)" in shown
    memory_diff = json.loads((root / "history" / record["id"] / "memory_diff.json").read_text())
    decisions = memory_diff["review"]["decisions"]
    assert [d["approvals"] for d in decisions] == [["ana", "ben"], ["ana"]]
    assert [d["reviewer"] for d in decisions] == ["ben", "ana"]


def test_the_reviewer_is_the_configured_name_else_the_os_login(tmp_path: Path) -> None:
    root, _ = workspace_with_plan(tmp_path, '[review]\npolicy = "ask"')
    by_login = ovtui(root, "review", "reject", PLAN, "1", "--note", "not needed", login="dora")
    assert "rejected item(s) 1; 1 undecided (by dora)" in by_login.stdout
    config = root / "ovtui.toml"
    config.write_text(
        config.read_text().replace("[review]\n", '[review]\nreviewer = "carol"\n'), encoding="utf-8"
    )
    by_config = ovtui(root, "review", "approve", PLAN, "0", login="dora")
    assert "approved item(s) 0; 0 undecided (by carol)" in by_config.stdout
    shown = ovtui(root, "review", "show", PLAN, "1").stdout
    assert "item      1: rejected — not needed (by dora)" in shown


def test_approving_some_hunks_applies_the_base_with_those_hunks_and_the_record_names_them(
    tmp_path: Path,
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    store = MemoryStore(WorkspacePaths(root, "default"))
    current = experience(store, "seat_selection")
    assert current is not None
    lines = current.content.splitlines()
    middle = len(lines) // 2
    assert 0 < middle < len(lines) - 1
    # three hunks: a first line added, a middle line rewritten, a closing line added
    rewritten = [*lines[:middle], lines[middle] + " (checked)", *lines[middle + 1 :]]
    after = "\n".join(["- Greet the customer.", *rewritten, "- Say goodbye."])
    item = upsert(store, "seat_selection", after)
    PendingPlans(store).park(
        PolicyUpdatePlan(items=[item], metadata={"plan_id": PLAN}), [ItemDecision(item=0)]
    )

    shown = ovtui(root, "review", "show", PLAN, "0").stdout
    assert "@@ hunk 1 (line 1) @@\n+- Greet the customer." in shown and "@@ hunk 3" in shown
    refused = ovtui(root, "review", "approve", PLAN, "0", "--hunks", "1,7")
    assert refused.returncode == 2 and "no hunk 7: this change has hunks 1–3" in refused.stderr
    assert ovtui(root, "review", "approve", PLAN, "0", "--hunks", "1,3", "--reviewer", "ana").returncode == 0
    assert "Hunks of content (approved: 1, 3)" in ovtui(root, "review", "show", PLAN, "0").stdout
    applied = ovtui(root, "review", "apply", PLAN)
    assert applied.returncode == 0, applied.stderr

    written = experience(store, "seat_selection")
    assert written is not None
    assert written.content.splitlines() == ["- Greet the customer.", *lines, "- Say goodbye."]
    [record] = json.loads(ovtui(root, "history", "--json").stdout)
    assert (
        "item 0: only hunks 1, 3 of its content approved"
        in ovtui(root, "history", "show", record["id"]).stdout
    )
    memory_diff = json.loads((root / "history" / record["id"] / "memory_diff.json").read_text())
    assert memory_diff["review"]["decisions"][0]["hunks"] == [1, 3]
