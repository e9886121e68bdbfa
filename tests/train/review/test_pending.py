"""Pending plans as a store written by several processes: a lock per plan file, a file watch to wake,
a plan applied once however many processes try, and settled plans moved out with every decision."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from plan_support import append_line, killed_copy
from workspace_support import history_of, memory_of

from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.memory.history import HistoryStore
from ovtui.memory.store import MemoryStore
from ovtui.storage import fsio
from ovtui.train.review.pending import PendingPlans, PlanSettledError
from ovtui.train.review.plans import ItemDecision, PendingPlan
from ovtui.wiring.workspace import Workspace

ITEMS = 40

# Run in a separate interpreter: marks every item stale, then fresh, then stale... until the decider
# has finished. It prints one line after its first write so the decider starts while it marks.
MARKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from ovtui.core.domain import Experience, ExperienceSet
    from ovtui.train.review.pending import PendingPlans
    from ovtui.memory.store import MemoryStore

    pending = PendingPlans(MemoryStore.open(sys.argv[1]))
    count = int(sys.argv[2])

    def snapshot(version):
        return ExperienceSet(root_uri="viking://x", policies=[
            Experience(name=f"e{i}", uri=f"viking://x/e{i}", version=version, status="production",
                       content="## Situation\\n- before")
            for i in range(count)
        ])

    sets = [snapshot(2), snapshot(1)]  # version 2: every item stale; version 1: none
    writes = rounds = 0
    while True:
        writes += len(pending.refresh_stale(sets[rounds % 2]))
        rounds += 1
        if rounds == 1:
            print("marking", flush=True)
        if Path(sys.argv[3]).exists():
            break
    print(writes, flush=True)
    """
)

DECIDER = textwrap.dedent(
    """
    import sys
    from ovtui.train.review.pending import PendingPlans
    from ovtui.memory.store import MemoryStore

    pending = PendingPlans(MemoryStore.open(sys.argv[1]))
    sys.stdin.readline()  # the go signal
    for i in range(int(sys.argv[2])):
        pending.decide("p1", i, "approved" if i % 2 else "rejected", note=f"person {i}")
    open(sys.argv[3], "w").close()  # tells the marker to stop
    """
)

SETTLER = textwrap.dedent(
    """
    import sys
    from ovtui.train.review.pending import PendingPlans
    from ovtui.memory.store import MemoryStore

    pending = PendingPlans(MemoryStore.open(sys.argv[1]))
    pending.settle(pending.get("p1"), "discarded", None)
    """
)


def _plan(count: int) -> PolicyUpdatePlan:
    items = [
        PolicyPlanItem(
            kind="upsert",
            target_name=f"e{i}",
            before_content="## Situation\n- before",
            after_content="## Situation\n- after",
            base_version=1,
            confidence=0.5,
        )
        for i in range(count)
    ]
    return PolicyUpdatePlan(items=items, metadata={"plan_id": "p1"})


def _python(script: str, *args: str, **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", script, *args], text=True, **popen
    )


def test_decisions_survive_stale_marking_in_another_process(tmp_path: Path) -> None:
    pending = PendingPlans(MemoryStore.open(tmp_path))
    pending.park(_plan(ITEMS), [ItemDecision(item=i) for i in range(ITEMS)])

    done = str(tmp_path / "decider-done")
    marker = _python(MARKER, str(tmp_path), str(ITEMS), done, stdout=subprocess.PIPE)
    decider = _python(DECIDER, str(tmp_path), str(ITEMS), done, stdin=subprocess.PIPE)
    try:
        assert marker.stdout is not None and decider.stdin is not None
        assert marker.stdout.readline().strip() == "marking"
        decider.stdin.write("go\n")
        decider.stdin.close()
        assert decider.wait(timeout=120) == 0
        writes = int(marker.stdout.readline())
        assert marker.wait(timeout=120) == 0
    finally:
        for process in (marker, decider):
            if process.poll() is None:
                process.kill()
                process.wait()

    final = pending.get("p1")
    assert writes >= 2  # the marker really rewrote the plan while the person decided
    assert [d.decision for d in final.decisions] == [
        "approved" if i % 2 else "rejected" for i in range(ITEMS)
    ]
    assert [d.note for d in final.decisions] == [f"person {i}" for i in range(ITEMS)]
    assert final.stale in ([], list(range(ITEMS)))  # whole writes only: never a mix of two states


async def test_a_plan_settled_by_another_process_wakes_the_waiting_run(tmp_path: Path) -> None:
    pending = PendingPlans(MemoryStore.open(tmp_path))
    pending.park(_plan(1), [ItemDecision(item=0)])
    waiter = asyncio.create_task(pending.wait_settled("p1"))
    await asyncio.sleep(0)  # let the waiter take its first look
    assert not waiter.done()

    settler = await asyncio.create_subprocess_exec(sys.executable, "-c", SETTLER, str(tmp_path))
    assert await settler.wait() == 0
    settled = await asyncio.wait_for(waiter, timeout=30)
    assert settled.status == "discarded"


async def test_waiting_on_a_plan_whose_file_vanished_is_an_error(tmp_path: Path) -> None:
    pending = PendingPlans(MemoryStore.open(tmp_path))
    pending.park(_plan(1), [ItemDecision(item=0)])
    waiter = asyncio.create_task(pending.wait_settled("p1"))
    await asyncio.sleep(0)
    pending.remove("p1")
    with pytest.raises(OvtuiError, match="no pending plan"):
        await asyncio.wait_for(waiter, timeout=30)


def test_a_settled_plan_takes_no_more_decisions(tmp_path: Path) -> None:
    pending = PendingPlans(MemoryStore.open(tmp_path))
    pending.park(_plan(2), [ItemDecision(item=0), ItemDecision(item=1, decision="approved")])
    pending.settle(pending.get("p1"), "discarded", None)
    with pytest.raises(OvtuiError, match="already discarded"):
        pending.decide("p1", 0, "approved")


# --- applying a plan once, and settled plans leaving the folder ------------------------------------

APPLIER = textwrap.dedent(
    """
    import asyncio, json, sys
    from ovtui.core.errors import OvtuiError
    from ovtui.wiring.workspace import Workspace

    workspace = Workspace(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.readline()  # the go signal, sent to both appliers at once
    try:
        result = asyncio.run(workspace.review.apply_pending(sys.argv[2]))
        print(json.dumps({"history_id": result.history_id}), flush=True)
    except OvtuiError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
    """
)


DISCARDER = textwrap.dedent(
    """
    import json, sys
    from ovtui.core.errors import OvtuiError
    from ovtui.train.review.pending import PendingPlans
    from ovtui.memory.store import MemoryStore

    pending = PendingPlans(MemoryStore.open(sys.argv[1]), lock_timeout=float(sys.argv[3]))
    print("ready", flush=True)
    sys.stdin.readline()  # the go signal
    try:
        pending.settle(pending.get(sys.argv[2]), "discarded", None)  # what `ovtui review discard` does
        print(json.dumps({"discarded": True}), flush=True)
    except OvtuiError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
    """
)


def _race(*processes: subprocess.Popen[str]) -> list[dict[str, Any]]:
    """Start processes that each printed "ready" at once, and collect the JSON line each prints."""
    try:
        for process in processes:  # all are up before any may start
            assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        outcomes = []
        for process in processes:
            assert process.stdout is not None and process.stdin is not None
            outcomes.append(json.loads(process.stdout.readline()))
            process.stdin.close()
            assert process.wait(timeout=120) == 0
        return outcomes
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def _approved_plan(root: Path) -> tuple[PendingPlans, dict[str, int]]:
    """A plan of two updates, every item approved with a note, parked in the workspace at ``root``."""
    store = MemoryStore.open(root)
    items = [
        append_line(store, name, f"- {name} rule from the review")
        for name in ("refund_status", "address_change")
    ]
    plan = PolicyUpdatePlan(items=items, metadata={"plan_id": "race1"})
    pending = PendingPlans(store)
    pending.park(plan, [ItemDecision(item=i, decision="approved", note=f"ok {i}") for i in range(2)])
    versions = {name: _version(store, name) for name in ("refund_status", "address_change")}
    return pending, versions


def _version(store: MemoryStore, name: str) -> int:
    memory = store.read(store.path_for_name("experiences", name))
    return memory.version


def test_two_processes_applying_one_plan_apply_it_once(tmp_workspace: Path) -> None:
    pending, versions = _approved_plan(tmp_workspace)
    appliers = [
        _python(APPLIER, str(tmp_workspace), "race1", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    outcomes = _race(*appliers)
    won = [i for i, outcome in enumerate(outcomes) if outcome.get("history_id")]
    assert len(won) == 1, outcomes
    winner, loser = appliers[won[0]], outcomes[1 - won[0]]
    history_id = outcomes[won[0]]["history_id"]
    assert f"plan race1 was already applied by pid {winner.pid} on " in loser["error"]
    assert f"(record: history/{history_id})" in loser["error"] and loser["error"].endswith("nothing done")

    store = MemoryStore.open(tmp_workspace)
    [entry] = HistoryStore(store.paths).list()  # one record: the plan was applied once
    assert entry.id == history_id
    assert {name: _version(store, name) for name in versions} == {n: v + 1 for n, v in versions.items()}
    settled = pending.get("race1")
    assert settled.status == "applied" and settled.history_id == history_id
    assert [d.note for d in settled.decisions] == ["ok 0", "ok 1"]
    assert not (pending.folder / "race1.json").exists() and (pending.settled_folder / "race1.json").exists()


def test_an_apply_and_a_discard_racing_agree_on_what_happened(tmp_workspace: Path) -> None:
    pending, versions = _approved_plan(tmp_workspace)
    applier = _python(APPLIER, str(tmp_workspace), "race1", stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    discarder = _python(
        DISCARDER, str(tmp_workspace), "race1", "60", stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    applied, discarded = _race(applier, discarder)

    store = MemoryStore.open(tmp_workspace)
    records = HistoryStore(store.paths).list()
    now = {name: _version(store, name) for name in versions}
    settled = pending.get("race1")
    if settled.status == "applied":  # the apply came first: the discard is refused, naming it
        assert applied["history_id"] == settled.history_id == records[0].id and len(records) == 1
        assert now == {n: v + 1 for n, v in versions.items()}
        assert f"plan race1 was already applied by pid {applier.pid}" in discarded["error"]
    else:  # the discard came first: nothing was written
        assert settled.status == "discarded" and discarded == {"discarded": True}
        assert records == [] and now == versions
        assert f"plan race1 was already discarded by pid {discarder.pid}" in applied["error"]


async def test_a_claimed_plan_cannot_be_settled_by_another_process(tmp_workspace: Path) -> None:
    pending, _ = _approved_plan(tmp_workspace)
    async with pending.claimed(["race1"]) as claim:
        # Meanwhile (as while an apply runs) a discard in another process waits, here briefly.
        discarder = _python(
            DISCARDER, str(tmp_workspace), "race1", "0.2", stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        [blocked] = _race(discarder)
        assert "stayed locked" in blocked["error"] and pending.get("race1").status == "pending"
        claim.settle(claim.plans[0], "applied", None)
    late = _python(
        DISCARDER, str(tmp_workspace), "race1", "60", stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    [refused] = _race(late)
    assert refused["error"].startswith(f"plan race1 was already applied by pid {os.getpid()} on ")
    with pytest.raises(PlanSettledError, match="already applied"):
        async with pending.claimed(["race1"]):
            pass


async def test_a_settled_plan_leaves_the_folder_with_every_decision(tmp_workspace: Path) -> None:
    store = MemoryStore.open(tmp_workspace)
    pending = PendingPlans(store)
    pending.park(_plan(2), [ItemDecision(item=0), ItemDecision(item=1)])
    pending.decide("p1", 0, "rejected", note="too specific")
    pending.edit_after("p1", 1, "## Situation\n- written by the reviewer")
    pending.settle(pending.get("p1"), "discarded", None)

    assert pending.list() == [] and list(pending.folder.glob("*.json")) == []
    kept = PendingPlan.model_validate_json((pending.settled_folder / "p1.json").read_text(encoding="utf-8"))
    assert kept.status == "discarded" and kept.settled_by and kept.settled_at
    assert kept.decisions[0].decision == "rejected" and kept.decisions[0].note == "too specific"
    assert kept.plan.items[1].after_content == "## Situation\n- written by the reviewer"
    with pytest.raises(PlanSettledError, match="plan p1 was already discarded by pid"):
        pending.resolve("p1")  # `ovtui review apply p1` names who settled it
    with pytest.raises(PlanSettledError, match="already discarded"):
        pending.settle(pending.get("p1"), "discarded", None)

    # Every item rejected: applied with nothing written and no record; the rejections are kept.
    pending, _ = _approved_plan(tmp_workspace)
    pending.decide_all("race1", "rejected")
    pending.decide_items("race1", [0, 1], "rejected", note="not now")
    result = await Workspace(tmp_workspace).review.apply_pending("race1")
    assert result.history_id is None and not result.written_uris
    kept = pending.get("race1")
    assert kept.status == "applied" and [d.note for d in kept.decisions] == ["not now", "not now"]
    assert sorted(p.name for p in pending.folder.glob("*.json")) == []
    assert sorted(p.name for p in pending.settled_folder.glob("*.json")) == ["p1.json", "race1.json"]


def _settle_child(root: str, crash_after: int) -> None:
    fsio.set_crash_after(crash_after)
    try:
        pending = PendingPlans(MemoryStore.open(root))
        pending.settle(pending.get("p1"), "discarded", None)
    finally:
        os._exit(3)  # reached only when the crash point was never hit


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork are POSIX")
def test_sigkill_while_settling_leaves_the_plan_waiting_or_settled_never_lost(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    PendingPlans(MemoryStore.open(template)).park(
        _plan(1), [ItemDecision(item=0, decision="rejected", note="kept through a crash")]
    )
    counted = PendingPlans(MemoryStore.open(shutil.copytree(template, tmp_path / "count")))
    fsio.set_crash_after(10**9)  # count the steps of one settle without crashing
    try:
        counted.settle(counted.get("p1"), "discarded", None)
        steps = fsio.steps_taken()
    finally:
        fsio.set_crash_after(None)
    assert steps >= 5  # the settled state written (temp, rename, folder sync), then moved

    outcomes = []
    for crash_after in range(1, steps + 1):
        root = tmp_path / f"run{crash_after}"
        killed_copy(template, root, _settle_child, crash_after)
        after = PendingPlans(MemoryStore.open(root))
        plan = after.get("p1")
        assert plan.decisions[0].note == "kept through a crash", crash_after
        outcomes.append(plan.status)
        if plan.status == "pending":
            assert after.list() == [plan]
        else:  # settled: the next settle (of any plan) moves a file the crash left behind
            after.park(_plan(1).model_copy(update={"metadata": {"plan_id": "p2"}}), [ItemDecision(item=0)])
            after.settle(after.get("p2"), "discarded", None)
            assert sorted(p.name for p in after.folder.glob("*.json")) == []
            assert after.get("p1").status == "discarded" and after.list() == []
        shutil.rmtree(root)
    assert outcomes[0] == "pending" and outcomes[-1] == "discarded"
    assert outcomes == sorted(outcomes, key=["pending", "discarded"].index)


def _apply_child(root: str, crash_after: int) -> None:
    fsio.set_crash_after(crash_after)
    try:
        asyncio.run(Workspace(root).review.apply_pending("race1"))
    finally:
        os._exit(3)  # reached only when the crash point was never hit


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork are POSIX")
def test_an_apply_killed_at_any_step_is_finished_once_by_the_next_apply(
    tmp_workspace: Path, tmp_path: Path
) -> None:
    """Killed anywhere in an apply (the files, the record, settling the plan): applying again
    either applies it or says it was applied, with its one record — never a second record, never
    a plan left waiting with its own changes reported as stale."""
    _approved_plan(tmp_workspace)
    counted = shutil.copytree(tmp_workspace, tmp_path / "count")
    fsio.set_crash_after(10**9)
    try:
        asyncio.run(Workspace(counted).review.apply_pending("race1"))
        steps = fsio.steps_taken()
    finally:
        fsio.set_crash_after(None)

    told_applied = 0
    for crash_after in range(1, steps + 1):
        root = tmp_path / f"run{crash_after}"
        killed_copy(tmp_workspace, root, _apply_child, crash_after)
        workspace = Workspace(root)
        try:
            result = asyncio.run(workspace.review.apply_pending("race1"))
            assert result.history_id and not result.item_errors, (crash_after, result.errors)
        except PlanSettledError as exc:
            assert "was already applied" in str(exc), crash_after
            told_applied += 1
        applies = [e for e in history_of(workspace).entries().values() if e.plan_id == "race1"]
        assert len(applies) == 1, crash_after
        assert workspace.review.pending_plan("race1").status == "applied", crash_after
        assert _version(memory_of(workspace), "refund_status") == _version(
            MemoryStore.open(counted), "refund_status"
        )
        shutil.rmtree(root)
    assert told_applied >= 1  # some crash points fall after the record, before the settle


def test_an_edit_sends_the_approvals_of_the_text_before_it_back(tmp_workspace: Path) -> None:
    """One person's approval must not carry over to text another person wrote after it."""
    store = MemoryStore.open(tmp_workspace)
    pending = PendingPlans(store)
    pending.park(_plan(1), [ItemDecision(item=0)])
    approved = pending.decide_items("p1", [0], "approved", reviewer="Ana ")
    assert (approved.decisions[0].decision, approved.decisions[0].approvers) == ("approved", ["ana"])
    edited = pending.edit_after("p1", 0, "## Situation\n- NEVER ask for an id", reviewer="bob")
    decision = edited.decisions[0]
    assert (decision.decision, decision.approvals) == ("pending", [])
    assert "approvals were for the text before the edit" in decision.note
