"""What adherence teaches: an ignored experience and a misleading one become one plan in the
review queue — the first made followable (its ignored line first), the second revised (the line
its passing rollouts broke left out, those trajectories as evidence) — and nothing is applied."""

from __future__ import annotations

from pathlib import Path

from workspace_support import build_sample_workspace, memory_of, plans_of

from ovtui.core.domain import Experience
from ovtui.plugins.adherence import Directive, Verdict
from ovtui.train.adherence.proposals import PLAN_SOURCE
from ovtui.train.adherence.store import AdherenceStore, Observation
from ovtui.wiring.workspace import Workspace

TRAJECTORY = "viking://user/default/memories/trajectories/seat_selection_20260110093000.md"


def uses(experience: Experience, line: str, verdicts: list[tuple[Verdict, bool]]) -> list[Observation]:
    directive = Directive("always", ("transfer_to_human",), (), line)
    return [
        Observation(
            experience.uri,
            experience.name,
            experience.version,
            f"{experience.name}_{n}",
            passed,
            ((directive, verdict),),
            TRAJECTORY,
        )
        for n, (verdict, passed) in enumerate(verdicts)
    ]


def test_ignored_and_misleading_experiences_become_one_plan(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    workspace = Workspace(root)
    by_name = workspace.reading.experiences().by_name()
    wheelchair, seats = by_name["wheelchair_assistance_request"], by_name["seat_selection"]
    ignored = "Record the assistance type (to the gate, to the seat, own wheelchair in the hold)"
    misleading = "NEVER promise a specific seat before it shows as free"
    store = AdherenceStore(memory_of(workspace).paths)
    broke: tuple[Verdict, bool] = ("violated", True)
    kept: tuple[Verdict, bool] = ("followed", True)
    failed: tuple[Verdict, bool] = ("followed", False)
    store.record(uses(wheelchair, ignored, [broke] * 11 + [kept]))
    # Six cases fail whenever it is followed, six pass whenever it is broken.
    store.record(uses(seats, misleading, [failed] * 6 + [broke] * 6))
    before = {p: p.read_text() for p in (root / "memories/experiences").iterdir()}

    plan_id = workspace.measures.propose_adherence()
    assert plan_id is not None
    parked = next(p for p in plans_of(workspace).list() if p.plan_id == plan_id)
    assert parked.plan.metadata["source"] == PLAN_SOURCE
    items = {item.target_name: item for item in parked.plan.items}
    assert set(items) == {wheelchair.name, seats.name}
    approach = items[wheelchair.name].after_content.split("## Approach\n")[1]  # type: ignore[union-attr]
    assert approach.startswith(f"- {ignored}\n- get_reservation")
    assert "ignored" in items[wheelchair.name].metadata["rationale"]
    assert misleading not in (items[seats.name].after_content or "")
    assert "misleads" in items[seats.name].metadata["rationale"]
    assert items[seats.name].evidence_trajectory_uris == [TRAJECTORY]
    assert {p: p.read_text() for p in (root / "memories/experiences").iterdir()} == before  # not applied
    assert workspace.measures.propose_adherence() is None  # already waiting: not proposed twice
