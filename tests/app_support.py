"""Deterministic workspaces and plans for the app tests (no clocks, fixed ids, fixed mtimes).

Lives on the test path (``pythonpath = ["tests"]``), so tests in tests/app import it as ``app_support``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App
from textual.notifications import Notify
from textual.pilot import Pilot
from textual.widget import Widget
from workspace_support import (
    EXPERIENCES,
    build_workspace,
    experience_uri,
    plans_of,
    trajectory_uri,
)

from ovtui.app.app import OvtuiApp
from ovtui.core.domain import PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.fileformat import render_memory
from ovtui.train.review.plans import ItemDecision, PendingPlan
from ovtui.wiring.workspace import Workspace

FIXED_MTIME = 1_790_000_000  # 2026-09-21, so "changed" columns never show today's date
PLAN_ID = "plan0000demo"


def make_workspace(root: Path) -> Workspace:
    build_workspace(root)
    (root / "ovtui.toml").write_text('[review]\npolicy = "ask"\n', encoding="utf-8")
    freeze_mtimes(root)
    return Workspace(root)


def freeze_mtimes(root: Path) -> None:
    for path in (root / "memories").rglob("*.md"):
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))


def demo_plan(plan_id: str = PLAN_ID) -> PolicyUpdatePlan:
    """An edit, a new experience and a delete, planned against the files ``build_workspace`` writes."""
    cancel_before, _ = EXPERIENCES["reservation_cancellation"]
    refund_before, _ = EXPERIENCES["refund_status"]
    cancel_after = cancel_before.replace(
        "- Look the reservation up first",
        "- Look the reservation up first\n- IF refundable THEN state the refund path and ask for explicit "
        "confirmation before any change",
    ).replace(
        "NEVER cancel before explicit confirmation", "NEVER cancel before the customer confirms explicitly"
    )
    return PolicyUpdatePlan(
        items=[
            PolicyPlanItem(
                kind="upsert",
                target_name="reservation_cancellation",
                target_uri=experience_uri("reservation_cancellation"),
                before_content=cancel_before,
                after_content=cancel_after,
                base_version=2,
                confidence=0.84,
                evidence_trajectory_uris=[trajectory_uri("cancel_reservation_20261129120000")],
                metadata={"rationale": "successful cancellations asked first"},
            ),
            PolicyPlanItem(
                kind="upsert",
                target_name="baggage_allowance",
                target_uri=experience_uri("baggage_allowance"),
                before_content=None,
                after_content=(
                    "## Situation\n- Customer asks about baggage\n## Approach\n"
                    "- Look up the fare class\n## Reflect\n- ALWAYS quote the allowance in kg"
                ),
                base_version=None,
                confidence=0.55,
                evidence_trajectory_uris=[trajectory_uri("refund_lookup_20261129120500")],
            ),
            PolicyPlanItem(
                kind="delete",
                target_name="refund_status",
                target_uri=experience_uri("refund_status"),
                before_content=refund_before,
                after_content=None,
                base_version=1,
                confidence=0.4,
            ),
        ],
        metadata={"plan_id": plan_id, "backend": "offline"},
    )


def park_demo_plan(workspace: Workspace, plan_id: str = PLAN_ID) -> PendingPlan:
    return park_undecided(workspace, demo_plan(plan_id))


def park_undecided(workspace: Workspace, plan: PolicyUpdatePlan) -> PendingPlan:
    """Park ``plan`` with every item undecided, at a fixed time (no clock on screen)."""
    plans = plans_of(workspace)
    pending = plans.park(plan, [ItemDecision(item=i) for i in range(len(plan.items))])
    pending.created_at = "2026-11-29T12:00:00+00:00"
    plans.save(pending)
    return pending


def edit_experience(root: Path, name: str, content: str, version: int) -> None:
    """An outside edit of an experience file (what a person's editor would do)."""
    fields = {"experience_name": name, "memory_type": "experiences", "status": "draft", "version": version}
    (root / "memories" / "experiences" / f"{name}.md").write_text(
        render_memory(content, fields), encoding="utf-8"
    )


def screen_text(app: App[Any]) -> str:
    """What the terminal shows, as plain text (for assertions on what a person would read).

    Reads the compositor (private): tests/app/test_textual_private.py fails the day that changes.
    """
    strips = app.screen._compositor.render_strips()
    return "\n".join(strip.text.rstrip() for strip in strips)


def widget_text(app: App[Any], widget: Widget) -> str:
    """The words ``widget`` shows on screen, its wrapped lines joined (what a person reads there)."""
    region = widget.region
    strips = app.screen._compositor.render_strips()[region.y : region.bottom]
    return " ".join(" ".join(strip.crop(region.x, region.right).text.split()) for strip in strips)


def notifications(messages: list[object]) -> list[str]:
    """The text of every notification the app posted (toasts are not drawn under run_test)."""
    return [m.notification.message for m in messages if isinstance(m, Notify)]


LONG_LIVED = {"watch", "run"}  # the watcher never ends; a run may wait for a person


async def settle(app: App[Any], pilot: Pilot[Any]) -> None:
    """Let short workers finish and the screen catch up with the messages they posted."""
    await pilot.pause()
    short = [w for w in app.workers if w.group not in LONG_LIVED]
    if short:  # an empty list would mean "all workers" to wait_for_complete
        await app.workers.wait_for_complete(short)
    await pilot.pause()


async def press_and_settle(pilot: Pilot[Any], *keys: str) -> None:
    """Press ``keys``, then wait until what they started has settled."""
    await pilot.press(*keys)
    await settle(pilot.app, pilot)


async def wait_group(app: App[Any], pilot: Pilot[Any], group: str) -> None:
    """Wait for the workers of one group (``settle`` would also wait for a run paused for review)."""
    for worker in [w for w in app.workers if w.group == group]:
        await worker.wait()
    await pilot.pause()


MakeApp = Callable[..., OvtuiApp]  # the make_app fixture: OvtuiApp(workspace, watch_files=False, …)


async def edited_in_review(workspace: Workspace, make_app: MakeApp, added: str) -> tuple[str, str]:
    """The demo plan's item 0 approved, then edited in Review (``e``, the editor appending ``added``):
    what the screen shows before and after the edit is saved."""
    park_demo_plan(workspace)
    workspace.review.decide(PLAN_ID, 0, "approved")
    app = make_app(workspace, editor=lambda text: text + added)
    async with app.run_test(size=(180, 50)) as pilot:
        await press_and_settle(pilot, "2")
        before = screen_text(app)
        await press_and_settle(pilot, "e")
        return before, screen_text(app)


SnapCompare = Callable[..., bool]  # pytest-textual-snapshot's snap_compare fixture


LONG_PLAN_ID = "plan0001long"


def park_long_summary_plan(workspace: Workspace, plan_id: str = LONG_PLAN_ID) -> PendingPlan:
    """One edit whose summary is longer than its pane at 80×24: a long why, validation flips, a leak,
    counter-evidence, a line the agent cannot use and a body that quotes the fields marker."""
    before, _ = EXPERIENCES["reservation_cancellation"]
    after = before + (
        "\n- Be warm and patient with the customer."
        "\n- Quote the file format as `<!-- MEMORY_FIELDS` when asked about it."
    )
    flips = {
        "before": 1,
        "after": 2,
        "cases": 3,
        "gained": ["cancel_refundable"],
        "lost": [],
        "flipped": {"cancel_refundable": {"before": "failed: no confirmation", "after": "passed"}},
    }
    edit = demo_plan().items[0]  # the same edit of reservation_cancellation, with more to say
    metadata = {
        "rationale": (
            "three successful cancellations asked the customer to confirm before changing the "
            "booking, and the two that did not were escalated; the refund path was stated first"
        ),
        "validation": flips,
        "leaks": ["K4P7Q2"],
        "evidence": ["cancel_reservation_20261129120000"],
        "counter_evidence": ["refund_lookup_20261129120500"],
    }
    item = edit.model_copy(update={"after_content": after, "confidence": 0.61, "metadata": metadata})
    return park_undecided(workspace, PolicyUpdatePlan(items=[item], metadata={"plan_id": plan_id}))
