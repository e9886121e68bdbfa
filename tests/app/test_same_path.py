"""A plan approved in the app and the same plan approved by ``--approve all`` give identical results."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from app_support import MakeApp, demo_plan, make_workspace, park_demo_plan, press_and_settle
from workspace_support import memory_of

from ovtui.train.components.policy_updater import MemoryFilePolicyUpdater
from ovtui.train.review.plans import apply_reviewed
from ovtui.train.review.policy import ReviewPolicy
from ovtui.wiring.workspace import Workspace

STAMP = re.compile(r'(\\?"(?:created_at|updated_at|extracted_at)\\?": \\?")[^"\\]*')


def without_stamps(text: str) -> str:
    return STAMP.sub(r"\1<time>", text)


def memory_files(root: Path) -> dict[str, str]:
    files = sorted((root / "memories").rglob("*.md"))
    return {p.relative_to(root).as_posix(): without_stamps(p.read_text(encoding="utf-8")) for p in files}


def the_record(workspace: Workspace) -> dict[str, Any]:
    (entry,) = workspace.reading.history()
    record = workspace.reading.history_record(entry.id)
    return {
        "kind": record.kind,
        "operations": without_stamps(json.dumps(record.operations.model_dump(), sort_keys=True)),
        "summary": record.summary.model_dump(),
        "plan_id": record.review.plan_id,
        "decisions": [(d.item, d.decision) for d in record.review.decisions],  # notes say who decided
    }


async def test_app_approval_and_approve_all_write_the_same_files_and_records(
    tmp_path: Path, make_app: MakeApp
) -> None:
    in_app = make_workspace(tmp_path / "app")
    headless = make_workspace(tmp_path / "cli")

    park_demo_plan(in_app)
    app = make_app(in_app)
    async with app.run_test(size=(120, 40)) as pilot:
        await press_and_settle(pilot, "2")
        await pilot.press("A")
        await pilot.pause()
        await pilot.click("#confirm")  # the plan deletes a file
        await press_and_settle(pilot, "p", "enter")  # apply, once its confirmation is shown

    plan = demo_plan()  # what `ovtui train --approve all` does with a plan: the engine's own path
    await apply_reviewed(
        MemoryFilePolicyUpdater(memory_of(headless)),
        plan,
        ReviewPolicy("all").decisions(plan),
        headless.reading.experiences(),
    )

    assert memory_files(in_app.root) == memory_files(headless.root)
    assert the_record(in_app) == the_record(headless)
    summary = the_record(in_app)["summary"]
    assert (summary["total_adds"], summary["total_deletes"]) == (1, 1)  # updates include backlinks
