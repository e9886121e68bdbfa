"""Signed two-person review through ``ovtui review`` in real processes, with real SSH keys: with
``[review] signers`` every approval is signed and checked, two names with one key count once, an
approval unsigned, signed by another key, replayed for another item or hunks, or over changed
content is refused, two keys apply, and the record's signatures verify again (``review verify``,
and OpenSSH's ``ssh-keygen -Y verify``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_support import run_ovtui
from plan_support import append_line, delete, experience
from signing_support import keypair, public_line, ssh_add, ssh_agent, ssh_keygen_verify
from workspace_support import build_sample_workspace

from ovtui.core.domain import PolicyUpdatePlan
from ovtui.core.reviewers import NAMESPACE, statement
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import WorkspacePaths
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision

PLAN = "plansigned"


def signed_workspace(tmp_path: Path, keys: dict[str, Path]) -> tuple[Path, MemoryStore]:
    """A sample workspace with ``[review] signers`` (ana and root share ana's key; bob has his own)
    and plan PLAN waiting: item 0 deletes pet_travel_request, item 1 adds a line to seat_selection."""
    root = build_sample_workspace(tmp_path / "ws")
    (root / "allowed_signers").write_text(
        f"ana,root {public_line(keys['ana'])}\nbob {public_line(keys['bob'])}\n", encoding="utf-8"
    )
    config = root / "ovtui.toml"
    section = '[review]\nsecond_approver_for = ["delete"]\nsigners = "allowed_signers"\npolicy = "ask"'
    config.write_text(config.read_text().replace('[review]\npolicy = "ask"', section), encoding="utf-8")
    store = MemoryStore(WorkspacePaths(root, "default"))
    items = [
        delete(store, "pet_travel_request"),
        append_line(store, "seat_selection", "- Offer a window seat."),
    ]
    PendingPlans(store).park(
        PolicyUpdatePlan(items=items, metadata={"plan_id": PLAN}), [ItemDecision(item=i) for i in range(2)]
    )
    return root, store


def review(root: Path, *args: str, agent: str = "") -> tuple[int, str]:
    done = run_ovtui("review", *args, cwd=root, env={"SSH_AUTH_SOCK": agent, "LOGNAME": "tester"})
    return done.returncode, done.stdout + done.stderr


def edited_plan(root: Path, change: Any) -> tuple[int, str]:
    """Apply with the plan file changed by hand (``change(plan_json)``), then put it back."""
    path = root / ".ovtui" / "pending" / f"{PLAN}.json"
    original = path.read_text(encoding="utf-8")
    plan = json.loads(original)
    change(plan)
    path.write_text(json.dumps(plan), encoding="utf-8")
    try:
        return review(root, "apply", PLAN)
    finally:
        path.write_text(original, encoding="utf-8")


def test_signed_approvals_count_by_key_and_forgeries_are_refused(tmp_path: Path) -> None:
    keys = {name: keypair(tmp_path / "keys", name) for name in ("ana", "bob", "mallory")}
    root, store = signed_workspace(tmp_path, keys)

    code, out = review(root, "approve", PLAN, "0", "--reviewer", "ana")
    assert code == 2 and "no key to sign the approval with: give --key PATH" in out
    code, out = review(root, "approve", PLAN, "0", "--reviewer", "ana", "--key", str(keys["mallory"]))
    assert code == 2 and "is not one allowed_signers lists for ana" in out
    code, out = review(root, "approve", PLAN, "0", "--reviewer", "carol", "--key", str(keys["bob"]))
    assert code == 2 and "allowed_signers lists no key for reviewer 'carol'" in out

    assert review(root, "approve", PLAN, "0", "--reviewer", "ana", "--key", str(keys["ana"]))[0] == 0
    code, out = review(root, "approve", PLAN, "0", "--reviewer", "root", "--key", str(keys["ana"]))
    assert code == 0 and "item 0: 1 of 2 approvals (ana, root: one key)" in out
    assert "names are labels" not in out and "is a label" not in out
    code, out = review(root, "apply", PLAN)
    assert code == 2 and "1 of 2 approvals (ana, root: one key)" in out
    assert review(root, "approve", PLAN, "1", "--reviewer", "bob", "--key", str(keys["bob"]))[0] == 0

    def unsigned_bob(plan: Any) -> None:
        plan["decisions"][0]["approvals"].append({"reviewer": "bob"})

    def replayed_for_item_1(plan: Any) -> None:
        plan["decisions"][1]["approvals"] = [plan["decisions"][0]["approvals"][0]]

    def other_hunks(plan: Any) -> None:
        plan["decisions"][1]["approvals"][0]["hunks"] = [1]

    def changed_content(plan: Any) -> None:
        plan["plan"]["items"][1]["after_content"] += "\n- Always sell the upgrade."

    for forged, why in (
        (unsigned_bob, "item 0: the approval by bob does not count: it is not signed"),
        (replayed_for_item_1, "item 1: the approval by ana does not count: it was signed for other content"),
        (other_hunks, "item 1: the approval by bob does not count: the signature does not match"),
        (changed_content, "item 1: the approval by bob does not count: it was signed for other content"),
    ):
        code, out = edited_plan(root, forged)
        assert code == 2 and why in out, (forged.__name__, out)
    assert experience(store, "pet_travel_request") is not None  # nothing applied

    assert review(root, "approve", PLAN, "0", "--reviewer", "bob", "--key", str(keys["bob"]))[0] == 0
    code, out = review(root, "apply", PLAN)
    assert code == 0 and "deleted 1 file(s)" in out, out
    assert experience(store, "pet_travel_request") is None

    [record] = json.loads(run_ovtui("history", "--json", cwd=root).stdout)
    code, out = review(root, "verify")
    assert code == 0 and "4 signed approval(s) checked, 0 failed" in out, out
    path = root / "history" / record["id"] / "memory_diff.json"
    memory_diff = json.loads(path.read_text())
    decision = memory_diff["review"]["decisions"][0]
    assert decision["approved_by"] == {"item": ["ana", "root", "bob"]}
    bob = decision["signoffs"][2]
    signed = statement(PLAN, 0, bob.get("hunks"), bob["digest"], "approved", "bob", bob["at"])
    assert "signature for bob" in ssh_keygen_verify(
        root / "allowed_signers", "bob", NAMESPACE, bob["signature"], signed
    )

    decision["signoffs"][1]["reviewer"] = "bob"  # root's approval, claimed for bob
    path.write_text(json.dumps(memory_diff))
    code, out = review(root, "verify", record["id"])
    assert code == 1 and "FAILED" in out and "1 failed" in out, out


def test_approvals_sign_through_ssh_agent(tmp_path: Path) -> None:
    keys = {"ana": keypair(tmp_path / "keys", "ana"), "bob": keypair(tmp_path / "keys", "bob", "s3cret!")}
    root, store = signed_workspace(tmp_path, keys)
    with ssh_agent(tmp_path / "agent") as sock:
        ssh_add(sock, keys["ana"])
        ssh_add(sock, keys["bob"], "s3cret!")
        assert review(root, "approve", PLAN, "--reviewer", "ana", agent=sock)[0] == 0
        code, out = review(
            root, "approve", PLAN, "0", "--reviewer", "bob", "--key", str(keys["bob"]), agent=sock
        )
        assert code == 0 and "0 undecided" in out, out
        code, out = review(root, "apply", PLAN)
    assert code == 0, out
    assert experience(store, "pet_travel_request") is None
    code, out = review(root, "verify")
    assert code == 0 and "3 signed approval(s) checked, 0 failed" in out, out
