"""Approvals count per hunk and per person, through ``ovtui review`` in real processes: a hunk is
applied only when as many different people as its kind needs approved that hunk (one person's
approval of a rewrite hunk does not ride on another's approval of the item), the record says per
hunk who approved it, and one person's name written differently is one reviewer."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_ovtui
from plan_support import delete, experience, upsert
from workspace_support import build_sample_workspace

from ovtui.core.domain import PolicyUpdatePlan
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import WorkspacePaths
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision

PLAN = "planhunkpeople"
NO_AGENT = {"SSH_AUTH_SOCK": ""}


def review(root: Path, *args: str, login: str = "tester") -> tuple[int, str, str]:
    env = {**NO_AGENT, "LOGNAME": login, "USER": login}
    done = run_ovtui("review", *args, cwd=root, env=env)
    return done.returncode, done.stdout, done.stderr


def workspace(tmp_path: Path, rule: str) -> tuple[Path, MemoryStore]:
    root = build_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    section = f'[review]\nsecond_approver_for = {rule}\npolicy = "ask"'
    config.write_text(config.read_text().replace('[review]\npolicy = "ask"', section), encoding="utf-8")
    return root, MemoryStore(WorkspacePaths(root, "default"))


def park_three_hunks(store: MemoryStore) -> list[str]:
    """seat_selection with a line added first (hunk 1, an update), a line rewritten in the middle
    (hunk 2, a rewrite: the old line is gone) and one added last (hunk 3); its lines as they are."""
    current = experience(store, "seat_selection")
    assert current is not None
    lines = current.content.splitlines()
    middle = len(lines) // 2
    rewritten = [*lines[:middle], lines[middle] + " (checked)", *lines[middle + 1 :]]
    after = "\n".join(["- Greet the customer.", *rewritten, "- Say goodbye."])
    plan = PolicyUpdatePlan(items=[upsert(store, "seat_selection", after)], metadata={"plan_id": PLAN})
    PendingPlans(store).park(plan, [ItemDecision(item=0)])
    return lines


def test_a_rewrite_hunk_only_one_person_approved_is_not_applied(tmp_path: Path) -> None:
    root, store = workspace(tmp_path, '["rewrite"]')
    lines = park_three_hunks(store)

    assert review(root, "approve", PLAN, "0", "--hunks", "1", "--reviewer", "alice")[0] == 0
    code, out, _ = review(root, "approve", PLAN, "0", "--hunks", "1,2", "--reviewer", "bob")
    assert code == 0
    assert "item 0: hunk 2 (rewrite): 1 of 2 approvals (bob); it needs a second reviewer's approval" in out
    code, _, err = review(root, "apply", PLAN)
    assert code == 2
    assert "hunk 2 (rewrite): 1 of 2 approvals (bob): a second reviewer must approve it" in err
    current = experience(store, "seat_selection")
    assert current is not None and current.content.splitlines() == lines  # nothing applied

    # bob takes hunk 2 back and approves hunk 3 (an added line: one person is enough)
    assert review(root, "approve", PLAN, "0", "--hunks", "1,3", "--reviewer", "bob")[0] == 0
    code, out, err = review(root, "apply", PLAN)
    assert code == 0, err
    written = experience(store, "seat_selection")
    assert written is not None
    assert written.content.splitlines() == ["- Greet the customer.", *lines, "- Say goodbye."]

    [record] = json.loads(run_ovtui("history", "--json", cwd=root).stdout)
    decision = json.loads((root / "history" / record["id"] / "memory_diff.json").read_text())["review"][
        "decisions"
    ][0]
    assert decision["hunks"] == [1, 3]
    assert decision["approved_by"] == {"1": ["alice", "bob"], "3": ["bob"]}
    assert [(s["reviewer"], s["hunks"]) for s in decision["signoffs"]] == [("alice", [1]), ("bob", [1, 3])]
    shown = run_ovtui("history", "show", record["id"], cwd=root).stdout
    assert "item 0: hunk 1 approved by alice, bob\n          item 0: hunk 3 approved by bob" in shown


def test_one_name_written_three_ways_is_one_reviewer(tmp_path: Path) -> None:
    root, store = workspace(tmp_path, '["delete"]')
    items = [delete(store, "pet_travel_request")]
    PendingPlans(store).park(
        PolicyUpdatePlan(items=items, metadata={"plan_id": PLAN}), [ItemDecision(item=0)]
    )
    code, out, _ = review(root, "approve", PLAN, "0", "--reviewer", "alice")
    assert code == 0
    # without signers the CLI says what the rule is worth
    assert "without [review] signers a reviewer's name is a label" in out
    for variant in ("Alice ", " ALICE", "ａｌｉｃｅ"):
        code, out, _ = review(root, "approve", PLAN, "0", "--reviewer", variant)
        assert code == 0 and "item 0: 1 of 2 approvals (alice)" in out, out
    code, _, err = review(root, "apply", PLAN)
    assert code == 2 and "1 of 2 approvals (alice)" in err
    assert experience(store, "pet_travel_request") is not None

    code, _, err = review(root, "approve", PLAN, "0", "--reviewer", "   ")
    assert code == 2 and "the reviewer's name is empty" in err
    code, out, _ = review(root, "approve", PLAN, "0", login="Alice")  # the OS login, normalised too
    assert "1 of 2 approvals (alice)" in out

    check = run_ovtui("check", cwd=root)
    assert "second_approver_for without [review] signers" in check.stdout + check.stderr
