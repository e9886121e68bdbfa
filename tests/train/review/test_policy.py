"""Review policies and pending plans (they are files, so they survive a restart)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.store import MemoryStore
from ovtui.storage.fsio import atomic_write_text
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision, approved_subplan
from ovtui.train.review.policy import ReviewPolicy, change_kind


def _item(
    name: str, confidence: float, before: str | None = None, version: int | None = None
) -> PolicyPlanItem:
    return PolicyPlanItem(
        kind="upsert",
        target_name=name,
        before_content=before,
        after_content=f"## Situation\n- {name}",
        base_version=version,
        confidence=confidence,
    )


def _plan(*items: PolicyPlanItem, plan_id: str = "p1") -> PolicyUpdatePlan:
    return PolicyUpdatePlan(items=list(items), metadata={"plan_id": plan_id})


def test_no_policy_approves_a_change_that_needs_two_reviewers() -> None:
    rewrite = _item("a", 0.9, before="## Situation\n- an old line", version=1)
    update = _item("b", 0.9, before="## Situation", version=1)
    gone = PolicyPlanItem(kind="delete", target_name="c", before_content="x", base_version=1, confidence=0.9)
    plan = _plan(rewrite, update, gone, _item("d", 0.9))
    assert [change_kind(i) for i in plan.items] == ["rewrite", "update", "delete", "new"]
    decisions = ReviewPolicy("all", ["delete", "rewrite"]).decisions(plan)
    assert [d.decision for d in decisions] == ["pending", "approved", "pending", "approved"]
    assert decisions[0].note == "held: a rewrite needs two reviewers"
    assert decisions[1].reviewer == "policy:all" and decisions[1].approvers == ["policy:all"]


def test_a_policy_chosen_mid_run_keeps_the_two_reviewer_rule() -> None:
    rewrite = _item("a", 0.9, before="## Situation\n- an old line", version=1)
    steered = ReviewPolicy("ask", ["rewrite"]).following("all")
    assert steered.spec == "all" and steered.second_approver_for == {"rewrite"}
    [decision] = steered.decisions(_plan(rewrite))
    assert decision.decision == "pending" and decision.note == "held: a rewrite needs two reviewers"


def test_policies_decide_per_item() -> None:
    plan = _plan(_item("a", 0.9), _item("b", 0.4))
    assert [d.decision for d in ReviewPolicy("all").decisions(plan)] == ["approved", "approved"]
    assert [d.decision for d in ReviewPolicy("none").decisions(plan)] == ["rejected", "rejected"]
    assert [d.decision for d in ReviewPolicy("confidence>=0.5").decisions(plan)] == ["approved", "rejected"]
    assert [d.decision for d in ReviewPolicy("ask").decisions(plan)] == ["pending", "pending"]
    with pytest.raises(OvtuiError, match="unknown review policy"):
        ReviewPolicy("sometimes")
    with pytest.raises(OvtuiError, match="not a number"):
        ReviewPolicy("confidence>=high")


def test_approved_subplan_keeps_order_and_indices() -> None:
    plan = _plan(_item("a", 1), _item("b", 1), _item("c", 1))
    decisions = [
        ItemDecision(item=0, decision="rejected"),
        ItemDecision(item=1, decision="approved"),
        ItemDecision(item=2, decision="approved"),
    ]
    sub, chosen = approved_subplan(plan, decisions)
    assert chosen == [1, 2]
    assert [i.target_name for i in sub.items] == ["b", "c"]


def test_pending_plans_survive_a_new_store(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path)
    pending = PendingPlans(store)
    pending.park(
        _plan(_item("a", 0.9), _item("b", 0.1)),
        ReviewPolicy("ask").decisions(_plan(_item("a", 0), _item("b", 0))),
    )
    pending.decide("p1", 0, "approved", note="looks right")
    pending.edit_after("p1", 1, "## Situation\n- edited by hand\n")

    again = PendingPlans(MemoryStore.open(tmp_path))  # a restart
    [plan] = again.list()
    assert plan.decisions[0].decision == "approved" and plan.decisions[0].note == "looks right"
    assert plan.plan.items[1].after_content == "## Situation\n- edited by hand"
    assert plan.undecided == 1
    with pytest.raises(OvtuiError, match="no item 7"):
        again.decide("p1", 7, "approved")
    with pytest.raises(OvtuiError):
        again.get("../escape")


def test_refresh_stale_marks_items_whose_base_changed(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path)
    path = store.path_for_name("experiences", "refunds")
    atomic_write_text(
        path,
        MemoryFile(
            content="## Situation\n- old", fields={"experience_name": "refunds", "version": 3}
        ).render(),
        root=store.paths.root,
    )
    pending = PendingPlans(store)
    pending.park(
        _plan(_item("refunds", 0.8, before="## Situation\n- old", version=3), _item("fresh", 0.8)),
        [ItemDecision(item=0), ItemDecision(item=1)],
    )
    assert pending.refresh_stale(ExperienceSetLoader(store).load_sync()) == []

    atomic_write_text(
        path,
        MemoryFile(
            content="## Situation\n- edited outside", fields={"experience_name": "refunds", "version": 4}
        ).render(),
        root=store.paths.root,
    )
    assert pending.refresh_stale(ExperienceSetLoader(store).load_sync()) == ["p1"]
    assert pending.get("p1").stale == [0]


async def test_settle_wakes_a_waiting_run(tmp_path: Path) -> None:
    import asyncio

    pending = PendingPlans(MemoryStore.open(tmp_path))
    pending.park(_plan(_item("a", 0.5)), [ItemDecision(item=0)])
    waiter = asyncio.create_task(pending.wait_settled("p1"))
    await asyncio.sleep(0)
    assert not waiter.done()
    pending.settle(pending.get("p1"), "discarded", None)
    settled = await waiter
    assert settled.status == "discarded"
    assert pending.list() == []
