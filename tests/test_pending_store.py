"""Pending plans as a store written by several processes: a lock per plan file, a file watch to wake."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ovtui.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.errors import OvtuiError
from ovtui.review import ItemDecision, PendingPlans
from ovtui.workspace.store import MemoryStore

ITEMS = 40

# Run in a separate interpreter: marks every item stale, then fresh, then stale... until the decider
# has finished. It prints one line after its first write so the decider starts while it marks.
MARKER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from ovtui.domain import Experience, ExperienceSet
    from ovtui.review import PendingPlans
    from ovtui.workspace.store import MemoryStore

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
    from ovtui.review import PendingPlans
    from ovtui.workspace.store import MemoryStore

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
    from ovtui.review import PendingPlans
    from ovtui.workspace.store import MemoryStore

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
