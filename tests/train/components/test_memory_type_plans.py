"""Plan items for any declared type: a plan mixing an experience and a preference is applied,
recorded and reverted exactly as an experience alone; types' own rules (one-file profile, entity
category folders, add-only cases) hold; trajectories are named and filled as OpenViking's."""

from __future__ import annotations

import json
import re
from pathlib import Path

from app_support import make_workspace
from plan_support import append_line, apply, experience, fixed_clock, snapshot
from workspace_support import experience_uri, memory_of

from ovtui.core.domain import (
    Case,
    Message,
    PolicyPlanItem,
    PolicyUpdatePlan,
    Rollout,
    Rubric,
    RubricEvaluation,
    TextPart,
)
from ovtui.core.fileformat import parse_memory
from ovtui.memory.history import HistoryStore
from ovtui.memory.revert import revert
from ovtui.memory.store import MemoryStore
from ovtui.plugins.backends import TrajectoryDraft
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.trajectory_analyzer import TrajectoryRolloutAnalyzer
from ovtui.train.review.pending import PendingPlans
from ovtui.train.review.plans import ItemDecision

PREFERENCE = "memories/preferences/default/seating.md"


def preference(
    topic: str, after: str, *, before: str | None = None, base: int | None = None
) -> PolicyPlanItem:
    return PolicyPlanItem(
        kind="upsert",
        memory_type="preferences",
        target_name=topic,
        before_content=before,
        base_version=base,
        after_content=after,
    )


def test_a_plan_mixing_an_experience_and_a_preference_is_applied_recorded_and_reverted(
    store: MemoryStore,
) -> None:
    root = store.paths.root
    before = snapshot(root)
    result = apply(
        store,
        append_line(store, "refund_status", "- ALWAYS give the refund reference"),
        preference("seating", "The user always wants an aisle seat --> never a middle one."),
        clock=fixed_clock,
    )
    assert not result.errors
    pref_uri = store.paths.uri_prefix + PREFERENCE
    assert pref_uri in result.written_uris and len(result.written_uris) == 2
    written = parse_memory((root / PREFERENCE).read_text(encoding="utf-8"))
    assert written.fields == {
        "user": "default",
        "topic": "seating",
        "version": 1,
        "memory_type": "preferences",
    }
    assert "status" not in written.fields  # only types that declare a status get one
    record = HistoryStore(store.paths).get(result.history_id or "")
    assert {(a.uri, a.memory_type) for a in record.operations.adds} == {(pref_uri, "preferences")}
    assert [u.memory_type for u in record.operations.updates] == ["experiences"]

    revert(store, result.history_id or "")
    after_revert = snapshot(root)
    assert set(after_revert) == set(before)  # the preference is gone again
    old, now = (
        parse_memory(s["memories/experiences/refund_status.md"].decode()) for s in (before, after_revert)
    )
    assert now.content == old.content and now.version == 3  # content restored; a revert is a write

    # Created again, then edited: CAS against what it was planned on, version +1, reverted alone.
    apply(store, preference("seating", written.content), clock=fixed_clock)
    edit = apply(
        store,
        preference("seating", "The user wants an aisle seat.", before=written.content, base=1),
        clock=fixed_clock,
    )
    assert not edit.errors and parse_memory((root / PREFERENCE).read_text()).version == 2
    stale = apply(store, preference("seating", "x", before=written.content, base=1), clock=fixed_clock)
    assert stale.stale_items == [0]
    revert(store, edit.history_id or "")
    assert parse_memory((root / PREFERENCE).read_text()).content == written.content
    kinds = [r.kind for r in HistoryStore(store.paths).list()]
    # Three applies wrote something; the all-stale one changed nothing and so left no record.
    assert kinds.count("revert") == 2 and kinds.count("apply") == 3
    assert stale.history_id is None


def test_profile_entities_and_add_only_cases_follow_their_declarations(store: MemoryStore) -> None:
    root = store.paths.root
    profile = PolicyPlanItem(
        kind="upsert", memory_type="profile", target_name="profile", after_content="- pilot"
    )
    entity = PolicyPlanItem(
        kind="upsert",
        memory_type="entities",
        target_name="caroline",
        after_content="# Caroline",
        metadata={"fields": {"category": "person"}},
    )
    no_category = PolicyPlanItem(kind="upsert", memory_type="entities", target_name="bob", after_content="x")
    case = PolicyPlanItem(
        kind="upsert",
        memory_type="cases",
        target_name="seat_change",
        after_content="# seat_change",
        metadata={"fields": {"task_signature": "move a seat", "input": "{}", "rubric": '{"name":"r"}'}},
    )
    result = apply(store, profile, entity, no_category, case, clock=fixed_clock)
    assert [e.item for e in result.item_errors] == [2]
    assert "needs the field 'category'" in result.item_errors[0].message
    assert (root / "memories/profile.md").is_file()
    caroline = parse_memory((root / "memories/entities/person/caroline.md").read_text())
    assert caroline.fields["category"] == "person" and caroline.fields["name"] == "caroline"
    assert (
        parse_memory((root / "memories/cases/seat_change.md").read_text()).fields["task_signature"]
        == "move a seat"
    )

    current = parse_memory((root / "memories/cases/seat_change.md").read_text())
    edit = PolicyPlanItem(
        kind="upsert",
        memory_type="cases",
        target_name="seat_change",
        before_content=current.content,
        base_version=current.version,
        after_content="changed",
    )
    refused = apply(store, edit, clock=fixed_clock)
    assert "add-only" in refused.errors[0]
    assert experience(store, "refund_status") is not None  # nothing else touched


def test_a_pending_entity_edit_turns_stale_when_its_file_changes(store: MemoryStore) -> None:
    def entity_edit(after: str) -> PolicyPlanItem:
        current = store.read(store.paths.root / "memories/entities/person/caroline.md")
        return PolicyPlanItem(
            kind="upsert",
            memory_type="entities",
            target_name="caroline",
            before_content=current.content,
            base_version=current.version,
            after_content=after,
            metadata={"fields": {"category": "person"}},
        )

    create = PolicyPlanItem(
        kind="upsert",
        memory_type="entities",
        target_name="caroline",
        after_content="# Caroline",
        metadata={"fields": {"category": "person"}},
    )
    assert not apply(store, create, clock=fixed_clock).errors
    pending = PendingPlans(store)
    plan = PolicyUpdatePlan(items=[entity_edit("# Caroline\n- pilot")], metadata={"plan_id": "p1"})
    pending.park(plan, [ItemDecision(item=0)])
    experiences = ExperienceSetLoader(store).load_sync()
    assert pending.refresh_stale(experiences) == []
    assert not apply(store, entity_edit("# Caroline\n- edited elsewhere"), clock=fixed_clock).errors
    assert pending.refresh_stale(experiences) == ["p1"] and pending.get("p1").stale == [0]


def test_a_new_event_is_filed_under_its_date_and_an_existing_one_by_uri(store: MemoryStore) -> None:
    root = store.paths.root
    event = PolicyPlanItem(
        kind="upsert",
        memory_type="events",
        target_name="pottery_class",
        after_content="Caroline went to a pottery class.",
        metadata={"fields": {"summary": "a pottery class", "ranges": "0-3"}},
    )
    result = apply(store, event, clock=fixed_clock)
    uri = store.paths.uri_prefix + "memories/events/2026/11/29/pottery_class.md"
    assert not result.errors and result.written_uris == [uri]
    written = parse_memory((root / "memories/events/2026/11/29/pottery_class.md").read_text())
    assert written.fields["ranges"] == "0-3" and written.fields["event_name"] == "pottery_class"
    # An existing event can only be designated by its URI (its name alone does not say which day).
    delete = PolicyPlanItem(kind="delete", memory_type="events", target_name="pottery_class", base_version=1)
    assert "needs the target_uri" in apply(store, delete, clock=fixed_clock).errors[0]
    gone = apply(store, delete.model_copy(update={"target_uri": uri}), clock=fixed_clock)
    assert gone.deleted_uris == [uri] and not (root / "memories/events/2026/11/29/pottery_class.md").exists()


class OneDraft:
    label = "test"

    async def extract(
        self, rollout: Rollout, evaluation: RubricEvaluation, feedback: str
    ) -> list[TrajectoryDraft]:
        return [TrajectoryDraft(name="seat change", content="## Task\n- move a seat")]


async def test_trajectories_carry_task_query_and_openviking_names(store: MemoryStore) -> None:
    case = Case(name="seat_change", task_signature="move a seat", rubric=Rubric(name="r"))
    rollout = Rollout(
        case=case,
        messages=[Message(role="user", parts=[TextPart(text="Can I get an aisle seat?")])],
        evaluation=RubricEvaluation(passed=True, score=1.0),
        metadata={"case_uris": ["viking://user/default/memories/cases/seat_change.md"]},
    )
    analyzer = TrajectoryRolloutAnalyzer(store, OneDraft(), clock=fixed_clock)
    first = await analyzer.analyze(rollout)
    second = await analyzer.analyze(rollout)  # the same second: the name is taken
    names = [Path(t.uri).name for t in [*first.trajectories, *second.trajectories]]
    assert names[0] == "seat_change_20261129120000.md"
    assert re.fullmatch(r"seat_change_20261129120000_[0-9a-f]{16}\.md", names[1]), names
    fields = store.read(store.paths.path_for(first.trajectories[0].uri)).fields
    assert fields["task_query"] == "Can I get an aisle seat?"
    assert fields["case_uris"] == ["viking://user/default/memories/cases/seat_change.md"]
    assert "source_archive_uri" not in fields  # not known for this rollout: not written


async def test_a_plan_parked_in_the_old_format_is_listed_and_applied(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path / "ws")
    uri = experience_uri("refund_status")
    current = workspace.reading.memory(uri)
    assert current is not None
    old_item = {  # as plans were written before items carried a memory type
        "kind": "upsert_experience",
        "target_experience_name": "refund_status",
        "target_experience_uri": uri,
        "before_content": current.content,
        "after_content": current.content + "\n- ALWAYS say the expected date",
        "base_version": current.version,
        "confidence": 0.5,
        "evidence_trajectory_uris": [],
        "metadata": {},
    }
    parked = {
        "plan_id": "oldplan1",
        "plan": {"items": [old_item], "metadata": {"plan_id": "oldplan1"}},
        "decisions": [{"item": 0, "decision": "approved", "note": ""}],
        "stale": [],
        "created_at": "2026-11-29T12:00:00+00:00",
        "run_id": None,
        "status": "pending",
        "history_id": None,
    }
    folder = memory_of(workspace).paths.state / "pending"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "oldplan1.json").write_text(json.dumps(parked), encoding="utf-8")
    (listed,) = workspace.review.pending_plans()
    assert listed.plan.items[0].memory_type == "experiences" and listed.plan.items[0].kind == "upsert"
    result = await workspace.review.apply_pending("oldplan1")
    assert not result.errors and result.written_uris == [uri]
    assert (
        "ALWAYS say the expected date"
        in (workspace.root / "memories/experiences/refund_status.md").read_text()
    )
