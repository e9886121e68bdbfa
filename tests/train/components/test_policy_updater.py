"""MemoryFilePolicyUpdater / DryRunPolicyUpdater: versions, links, compare-and-swap, records."""

from __future__ import annotations

from pathlib import Path

import pytest
from plan_support import (
    FIXED_NOW,
    append_line,
    apply,
    apply_async,
    delete,
    experience,
    fixed_clock,
    snapshot,
    upsert,
)
from workspace_support import experience_uri, trajectory_uri

from ovtui.core.context import ApplyOptions
from ovtui.core.decisions import ReviewDecision
from ovtui.core.domain import ExperienceSet, PolicyPlanItem, PolicyUpdatePlan
from ovtui.core.errors import LockTimeoutError
from ovtui.core.fileformat import parse_memory
from ovtui.memory.history import HistoryStore
from ovtui.memory.store import MemoryStore
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.policy_updater import DryRunPolicyUpdater, MemoryFilePolicyUpdater
from ovtui.train.review.policy import describe_apply

TRAJ = trajectory_uri("refund_lookup_20261129120500")
TRAJ2 = trajectory_uri("cancel_reservation_20261129120000")


def test_update_bumps_version_and_keeps_other_fields(store: MemoryStore) -> None:
    before = experience(store, "reservation_cancellation")
    assert before is not None and before.version == 2
    result = apply(store, append_line(store, "reservation_cancellation", "- ALWAYS repeat the dates"))
    after = experience(store, "reservation_cancellation")
    assert after is not None
    assert result.written_uris == [experience_uri("reservation_cancellation")]
    assert after.version == 3
    assert after.content.endswith("- ALWAYS repeat the dates")
    assert after.fields["status"] == "production"
    assert after.without("version") == before.without("version")


def test_create_starts_at_version_1_as_draft(store: MemoryStore) -> None:
    result = apply(store, upsert(store, "gift_cards", "## Situation\n- gift card balance"))
    created = experience(store, "gift_cards")
    assert created is not None
    assert result.written_uris == [experience_uri("gift_cards")]
    assert created.version == 1
    assert created.fields["status"] == "draft"
    assert created.fields["experience_name"] == "gift_cards"
    assert created.fields["memory_type"] == "experiences"


def test_delete_removes_the_file(store: MemoryStore, tmp_workspace: Path) -> None:
    result = apply(store, delete(store, "refund_status"))
    assert result.deleted_uris == [experience_uri("refund_status")]
    assert not (tmp_workspace / "memories/experiences/refund_status.md").exists()
    assert "refund_status" not in result.updated_policy_set.by_name()


def test_derived_from_links_and_backlinks_are_mirrored_and_deduplicated(store: MemoryStore) -> None:
    item = append_line(
        store, "refund_status", "- check the carrier", evidence=[TRAJ, TRAJ, TRAJ2], confidence=0.75
    )
    result = apply(store, item, clock=fixed_clock)
    exp = experience(store, "refund_status")
    assert exp is not None
    links = exp.fields["links"]
    assert [link["to_uri"] for link in links] == [TRAJ, TRAJ2]
    assert all(link["from_uri"] == exp.uri and link["link_type"] == "derived_from" for link in links)
    assert links[0]["weight"] == 0.75 and links[0]["created_at"] == "2026-11-29T12:00:00Z"
    traj = store.read_uri(TRAJ)
    assert traj is not None and traj.fields["backlinks"] == [links[0]]
    assert set(result.metadata["linked_uris"]) == {TRAJ, TRAJ2}
    # The person is told about the backlinks too, not only the experience written.
    told = describe_apply("p1", result)
    assert "wrote 1 and deleted 0 file(s), and updated the links of 2 other file(s)" in told

    # The same evidence again adds no duplicate link on either side.
    apply(store, append_line(store, "refund_status", "- more", evidence=[TRAJ]), clock=fixed_clock)
    again = experience(store, "refund_status")
    traj_again = store.read_uri(TRAJ)
    assert again is not None and traj_again is not None
    assert len(again.fields["links"]) == 2
    assert len(traj_again.fields["backlinks"]) == 1


def test_two_items_linking_one_trajectory_write_it_once(store: MemoryStore) -> None:
    items = [
        append_line(store, "refund_status", "- a", evidence=[TRAJ]),
        append_line(store, "address_change", "- b", evidence=[TRAJ]),
    ]
    result = apply(store, *items)
    traj = store.read_uri(TRAJ)
    assert traj is not None
    assert {b["from_uri"] for b in traj.fields["backlinks"]} == {
        experience_uri("refund_status"),
        experience_uri("address_change"),
    }
    record = HistoryStore(store.paths).get(result.history_id or "")
    assert [u.uri for u in record.operations.updates].count(TRAJ) == 1


def test_missing_evidence_is_a_warning_not_an_error(store: MemoryStore) -> None:
    missing = trajectory_uri("never_written_20260101000000")
    result = apply(store, append_line(store, "refund_status", "- x", evidence=[missing]))
    assert result.written_uris and not result.errors
    assert any(missing in w for w in result.metadata["warnings"])
    exp = experience(store, "refund_status")
    assert exp is not None and "links" not in exp.fields


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("content", "changed after this item was planned"),
        ("version", "this item was planned against version 2"),
    ],
)
def test_compare_and_swap_reports_stale_and_applies_the_rest(
    store: MemoryStore, change: str, message: str
) -> None:
    stale_item = append_line(store, "reservation_cancellation", "- planned line")
    fine_item = append_line(store, "refund_status", "- unrelated")
    # Someone else writes the target after planning: different content, or only the version.
    if change == "content":
        apply(store, append_line(store, "reservation_cancellation", "- someone else"))
    else:
        current = experience(store, "reservation_cancellation")
        assert current is not None
        interloper = PolicyPlanItem(
            kind="upsert",
            target_name="reservation_cancellation",
            base_version=current.version,
            after_content=current.content,
            metadata={"fields": {"tags": ["billing"]}},
        )
        apply(store, interloper)
    before = snapshot(store.paths.root)
    result = apply(store, stale_item, fine_item)
    assert result.stale_items == [0]
    assert message in result.item_errors[0].message
    assert "memories/experiences/reservation_cancellation.md" in result.item_errors[0].message
    assert result.written_uris == [experience_uri("refund_status")]
    after = snapshot(store.paths.root)
    changed = {k for k in after if after[k] != before.get(k)}
    assert changed == {"memories/experiences/refund_status.md"}


def test_create_of_a_file_that_now_exists_is_stale(store: MemoryStore) -> None:
    planned = upsert(store, "gift_cards", "mine")
    apply(store, upsert(store, "gift_cards", "theirs"))
    result = apply(store, planned)
    assert result.stale_items == [0]
    assert "created after this item was planned" in result.errors[0]
    exp = experience(store, "gift_cards")
    assert exp is not None and exp.content == "theirs"


def test_update_of_a_deleted_file_is_stale(store: MemoryStore) -> None:
    planned = append_line(store, "refund_status", "- x")
    apply(store, delete(store, "refund_status"))
    result = apply(store, planned)
    assert result.stale_items == [0]
    assert experience(store, "refund_status") is None


def test_second_item_on_the_same_file_in_one_plan_is_stale(store: MemoryStore) -> None:
    first = append_line(store, "refund_status", "- one")
    second = append_line(store, "refund_status", "- two")
    result = apply(store, first, second)
    assert result.stale_items == [1]
    # the record lists the item it did not write, and why
    [skipped] = HistoryStore(store.paths).get(result.history_id or "").skipped_operations
    assert (skipped.memory_type, skipped.reason_code) == ("experiences", "stale_base")
    exp = experience(store, "refund_status")
    assert exp is not None and exp.content.endswith("- one") and exp.version == 2


def test_noop_update_writes_nothing_and_is_not_in_the_record(store: MemoryStore) -> None:
    current = experience(store, "refund_status")
    assert current is not None
    before = snapshot(store.paths.root)
    result = apply(store, upsert(store, "refund_status", current.content + "\n\n"))
    assert result.written_uris == []
    assert result.metadata["unchanged_uris"] == [experience_uri("refund_status")]
    assert snapshot(store.paths.root) == before
    assert result.history_id is None and HistoryStore(store.paths).list() == []  # nothing changed


def test_patch_blocks_in_after_content_apply_to_the_current_text(store: MemoryStore) -> None:
    current = experience(store, "refund_status")
    assert current is not None
    item = upsert(
        store,
        "refund_status",
        "<<<<<<< SEARCH\n- ALWAYS give the expected date\n=======\n- ALWAYS give the date the tool returned\n"
        ">>>>>>> REPLACE",
    )
    result = apply(store, item)
    exp = experience(store, "refund_status")
    assert result.written_uris and exp is not None
    assert exp.content == current.content.replace("give the expected date", "give the date the tool returned")


def test_patch_that_does_not_match_is_an_item_error(store: MemoryStore) -> None:
    item = upsert(store, "refund_status", "<<<<<<< SEARCH\nnot there\n=======\nx\n>>>>>>> REPLACE")
    result = apply(store, item)
    assert not result.written_uris and result.item_errors and not result.item_errors[0].stale
    assert "not found" in result.errors[0]


def test_uri_that_disagrees_with_the_name_is_refused(store: MemoryStore) -> None:
    item = append_line(store, "refund_status", "- x")
    item = item.model_copy(update={"target_uri": experience_uri("address_change")})
    before = snapshot(store.paths.root)
    result = apply(store, item)
    assert "does not match experiences 'refund_status'" in result.errors[0]
    assert snapshot(store.paths.root) == before


def test_status_and_fields_from_metadata(store: MemoryStore) -> None:
    item = append_line(
        store,
        "refund_status",
        "- x",
        metadata={"status": "staging", "fields": {"tags": ["refunds"], "version": 99, "links": "no"}},
    )
    apply(store, item)
    exp = experience(store, "refund_status")
    assert exp is not None
    assert exp.fields["status"] == "staging" and exp.fields["tags"] == ["refunds"]
    assert exp.version == 2 and "links" not in exp.fields


def test_record_holds_full_texts_review_and_errors(store: MemoryStore) -> None:
    old_text = (store.paths.root / "memories/experiences/refund_status.md").read_text(encoding="utf-8")
    items = [append_line(store, "refund_status", "- x"), upsert(store, "new_one", "hello")]
    stale = append_line(store, "address_change", "- y").model_copy(update={"base_version": 1})
    options = ApplyOptions(
        plan_id="plan-7",
        trace_id="trace-7",
        item_indices=[0, 1, 4],
        decisions=[
            ReviewDecision(item=0, decision="approved", note="looks right"),
            ReviewDecision(item=3, decision="rejected", note=""),
        ],
    )
    result = apply(store, *items, stale, options=options, clock=fixed_clock)
    record = HistoryStore(store.paths).get(result.history_id or "")
    assert record.kind == "apply" and record.trace_id == "trace-7"
    assert record.review.plan_id == "plan-7" and not record.review.dry_run
    assert [(d.item, d.decision, d.note) for d in record.review.decisions] == [
        (0, "approved", "looks right"),
        (3, "rejected", ""),
    ]
    assert record.extracted_at == "2026-11-29T12:00:00+00:00"  # OpenViking's form
    assert record.summary.total_adds == 1 and record.summary.total_updates == 1
    update = record.operations.updates[0]
    assert update.before == old_text
    assert update.after == (store.paths.root / "memories/experiences/refund_status.md").read_text(
        encoding="utf-8"
    )
    assert parse_memory(record.operations.adds[0].after).fields["version"] == 1
    assert record.metadata["item_errors"][0]["item"] == 2 and record.metadata["item_errors"][0]["stale"]
    assert record.metadata["item_errors"][0]["plan_item"] == 4 and record.review.item_indices == [0, 1, 4]
    assert result.history_id is not None and result.history_id.startswith(FIXED_NOW.strftime("%Y%m%dT%H%M%S"))


async def test_a_plan_that_changes_nothing_writes_no_record_but_its_dry_run_does(store: MemoryStore) -> None:
    assert (await apply_async(store)).history_id is None
    stale = upsert(store, "refund_status", "new text")
    await apply_async(store, append_line(store, "refund_status", "- meanwhile"))
    refused = await apply_async(store, stale)
    assert refused.history_id is None and refused.stale_items == [0]
    assert len(HistoryStore(store.paths).list()) == 1  # only the apply that changed a file
    dry = await DryRunPolicyUpdater(store).apply(PolicyUpdatePlan(), None)
    record = HistoryStore(store.paths).get(dry.history_id or "")
    assert record.dry_run and record.summary.total_adds == record.summary.total_updates == 0


async def test_dry_run_writes_only_the_record(store: MemoryStore) -> None:
    before = snapshot(store.paths.root)
    plan = PolicyUpdatePlan(
        items=[
            append_line(store, "refund_status", "- x", evidence=[TRAJ]),
            upsert(store, "brand_new", "text"),
        ],
        metadata={"plan_id": "dry-1"},
    )
    result = await DryRunPolicyUpdater(store).apply(plan, None)
    assert result.dry_run
    assert set(result.written_uris) == {experience_uri("refund_status"), experience_uri("brand_new")}
    assert snapshot(store.paths.root) == before
    assert sorted(p.name for p in store.paths.history.iterdir()) == sorted(
        [result.history_id or "", "index.jsonl", "chain.json"]  # the record, chained like any other
    )
    record = HistoryStore(store.paths).get(result.history_id or "")
    assert record.kind == "dry_run" and record.review.dry_run and record.review.plan_id == "dry-1"
    assert record.summary.total_adds == 1 and record.summary.total_updates == 2  # experience + backlink


async def test_dry_run_reports_stale_items_like_an_apply(store: MemoryStore) -> None:
    stale = append_line(store, "refund_status", "- x").model_copy(update={"base_version": 7})
    result = await DryRunPolicyUpdater(store).apply(PolicyUpdatePlan(items=[stale]), None)
    assert result.dry_run and result.stale_items == [0] and not result.written_uris


async def test_async_apply_with_options(store: MemoryStore) -> None:
    policy_set = await ExperienceSetLoader(store).load()
    options = ApplyOptions(plan_id="p-async", decisions=[ReviewDecision(item=0, decision="approved")])
    plan = PolicyUpdatePlan(items=[append_line(store, "refund_status", "- async")])
    result = await MemoryFilePolicyUpdater(store).apply(plan, policy_set, options)
    record = HistoryStore(store.paths).get(result.history_id or "")
    assert record.review.plan_id == "p-async" and record.review.decisions[0].decision == "approved"
    assert result.updated_policy_set.by_name()["refund_status"].version == 2


async def test_incremental_policy_set_equals_a_reload(store: MemoryStore) -> None:
    base = ExperienceSetLoader(store).load_sync()
    items = [
        append_line(store, "refund_status", "- x"),
        delete(store, "address_change"),
        upsert(store, "aaa_first", "first"),
        upsert(store, "zzz_last", "last"),
    ]
    result = await MemoryFilePolicyUpdater(store).apply(PolicyUpdatePlan(items=items), base)
    reloaded = ExperienceSetLoader(store).load_sync()
    assert result.updated_policy_set.model_dump() == reloaded.model_dump()
    assert [p.name for p in base.policies] == ["address_change", "refund_status", "reservation_cancellation"]


async def test_lock_timeout_is_reported(store: MemoryStore) -> None:
    other = MemoryStore.open(store.paths.root)
    with other.lock.hold("someone else's apply"):
        updater = MemoryFilePolicyUpdater(store)
        with pytest.raises(LockTimeoutError, match="someone else's apply"):
            await updater.apply(PolicyUpdatePlan(), None, ApplyOptions(lock_timeout=0.05))


async def test_an_empty_plan_writes_nothing_and_never_waits_for_the_lock(store: MemoryStore) -> None:
    policy_set = ExperienceSetLoader(store).load_sync()
    other = MemoryStore.open(store.paths.root)
    with other.lock.hold("someone else's apply"):
        result = await MemoryFilePolicyUpdater(store).apply(
            PolicyUpdatePlan(), policy_set, ApplyOptions(lock_timeout=0.05)
        )
    assert result.updated_policy_set is policy_set and result.history_id is None
    assert not result.written_uris and not result.errors and HistoryStore(store.paths).list() == []


def test_a_missing_backlink_is_mirrored_even_when_the_experience_is_unchanged(store: MemoryStore) -> None:
    apply(store, append_line(store, "refund_status", "- x", evidence=[TRAJ]), clock=fixed_clock)
    traj_path = store.paths.root / "memories/trajectories/refund_lookup_20261129120500.md"
    traj = store.read(traj_path)
    traj_path.write_text(traj.render().replace('"backlinks"', '"lost_backlinks"'), encoding="utf-8")
    current = experience(store, "refund_status")
    assert current is not None
    result = apply(store, upsert(store, "refund_status", current.content, evidence=[TRAJ]), clock=fixed_clock)
    assert result.written_uris == [] and result.metadata["linked_uris"] == [TRAJ]
    repaired = store.read_uri(TRAJ)
    assert repaired is not None and repaired.fields["backlinks"] == current.fields["links"]


@pytest.mark.parametrize("loaded", [True, False], ids=["loaded-set", "set-built-in-memory"])
async def test_reload_from_an_updated_set_sees_changes_made_by_others(
    store: MemoryStore, loaded: bool
) -> None:
    base = ExperienceSetLoader(store).load_sync()
    if not loaded:  # no file signatures: the reload goes by the snapshot's time (taken a second ago)
        base = ExperienceSet(root_uri=base.root_uri, policies=base.policies)
        base._created_ns -= 1_000_000_000
    await apply_async(store, append_line(store, "address_change", "- written by another process"))
    result = await MemoryFilePolicyUpdater(store).apply(
        PolicyUpdatePlan(items=[append_line(store, "refund_status", "- ours")]), base
    )
    # The patched set is base + our write; reloading from it finds the other process's change.
    assert result.updated_policy_set.by_name()["address_change"].version == 3
    reloaded = await ExperienceSetLoader(store).load(previous=result.updated_policy_set)
    assert reloaded.model_dump() == ExperienceSetLoader(store).load_sync().model_dump()
    assert reloaded.by_name()["address_change"].version == 4


def test_case_uris_a_trajectory_names_are_checked_before_they_are_linked(store: MemoryStore) -> None:
    """``case_uris`` come from a rollout (an inbox file may say anything): only an existing case
    file is linked; an escaping URI, another type's file or a missing case is a warning."""
    case_uri = f"{store.paths.uri_prefix}memories/cases/refund_case.md"
    case_path = store.paths.path_for(case_uri)
    case_path.parent.mkdir(parents=True, exist_ok=True)
    case_path.write_text("# refund_case\n", encoding="utf-8")
    path = store.paths.path_for(TRAJ)
    trajectory = parse_memory(path.read_text())
    hostile = [
        f"{store.paths.uri_prefix}memories/cases/../experiences/refund_status.md",
        experience_uri("address_change"),
        f"{store.paths.uri_prefix}memories/cases/missing.md",
    ]
    trajectory.fields["case_uris"] = [*hostile, case_uri]
    path.write_text(trajectory.render())
    untouched = {uri: store.paths.path_for(uri).read_bytes() for uri in [experience_uri("address_change")]}
    result = apply(store, append_line(store, "refund_status", "- check the order first", evidence=[TRAJ]))
    assert not result.errors
    assert len(result.metadata["warnings"]) == len(hostile)
    for uri, text in untouched.items():
        assert store.paths.path_for(uri).read_bytes() == text
    links = parse_memory(case_path.read_text()).fields["links"]
    assert {(x["to_uri"], x["link_type"]) for x in links} == {
        (TRAJ, "related_to"),
        (experience_uri("refund_status"), "related_to"),
    }
