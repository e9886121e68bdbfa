"""Revert: the inverse of a record, through the journal, refusing on later changes unless forced."""

from __future__ import annotations

import asyncio

import pytest
from plan_support import append_line, apply, apply_async, delete, experience, snapshot, upsert
from workspace_support import experience_uri, trajectory_uri

from ovtui.core.errors import OvtuiError, RevertConflictError
from ovtui.core.fileformat import parse_memory, render_memory
from ovtui.memory.history import HistoryStore
from ovtui.memory.revert import arevert, revert
from ovtui.memory.store import MemoryStore

TRAJ = trajectory_uri("refund_lookup_20261129120500")


def _memory_texts(store: MemoryStore) -> dict[str, str]:
    return {k: v.decode() for k, v in snapshot(store.paths.root).items()}


def test_revert_restores_every_file(store: MemoryStore) -> None:
    original = _memory_texts(store)
    result = apply(
        store,
        append_line(store, "refund_status", "- new rule", evidence=[TRAJ]),
        upsert(store, "gift_cards", "gift card text"),
        delete(store, "address_change"),
    )
    reverted = revert(store, result.history_id or "")
    now = _memory_texts(store)
    assert set(now) == set(original)
    for path, text in original.items():
        if path.endswith("refund_status.md") or path.endswith("address_change.md") or "trajectories" in path:
            # Same content and fields; the version moved on (a revert is a write).
            old, new = parse_memory(text), parse_memory(now[path])
            assert new.content == old.content and new.without("version") == old.without("version")
        else:
            assert now[path] == text, path
    refund = experience(store, "refund_status")
    assert refund is not None and refund.version == 3  # 1 → 2 (apply) → 3 (revert)
    address = experience(store, "address_change")
    assert address is not None and address.version == 4
    assert set(reverted.deleted_uris) == {experience_uri("gift_cards")}
    record = HistoryStore(store.paths).get(reverted.history_id)
    assert record.kind == "revert" and record.reverts == result.history_id
    assert record.summary.total_deletes == 1 and record.summary.total_adds == 1


def test_revert_refuses_when_a_file_changed_after_the_record(store: MemoryStore) -> None:
    first = apply(store, append_line(store, "refund_status", "- one"), upsert(store, "gift_cards", "g"))
    apply(store, append_line(store, "refund_status", "- two"))
    apply(store, append_line(store, "gift_cards", "- edited"))
    before = snapshot(store.paths.root)
    records_before = len(HistoryStore(store.paths).list())
    with pytest.raises(RevertConflictError) as caught:
        revert(store, first.history_id or "")
    message = str(caught.value)
    assert (
        "memories/experiences/refund_status.md" in message and "memories/experiences/gift_cards.md" in message
    )
    assert "--force" not in message  # CLI wording: the CLI adds it, the app offers its own action
    assert snapshot(store.paths.root) == before
    assert len(HistoryStore(store.paths).list()) == records_before


def test_forced_revert_is_audited(store: MemoryStore) -> None:
    first = apply(store, append_line(store, "refund_status", "- one"))
    apply(store, append_line(store, "refund_status", "- two"))
    result = revert(store, first.history_id or "", force=True)
    refund = experience(store, "refund_status")
    assert refund is not None and not refund.content.endswith("- one") and "- two" not in refund.content
    assert refund.version == 4
    record = HistoryStore(store.paths).get(result.history_id)
    assert record.metadata == {"forced": True, "conflicts": ["memories/experiences/refund_status.md"]}
    assert result.conflicts == ["memories/experiences/refund_status.md"]


def test_dry_run_records_cannot_be_reverted(store: MemoryStore) -> None:
    from ovtui.core.domain import PolicyUpdatePlan
    from ovtui.train.components.policy_updater import DryRunPolicyUpdater

    dry = asyncio.run(
        DryRunPolicyUpdater(store).apply(
            PolicyUpdatePlan(items=[append_line(store, "refund_status", "- x")]), None
        )
    )
    with pytest.raises(OvtuiError, match="is a dry run"):
        revert(store, dry.history_id or "")


def test_dry_run_revert_writes_only_its_record(store: MemoryStore) -> None:
    applied = apply(store, append_line(store, "refund_status", "- one"))
    before = snapshot(store.paths.root)
    result = revert(store, applied.history_id or "", dry_run=True)
    assert snapshot(store.paths.root) == before
    record = HistoryStore(store.paths).get(result.history_id)
    assert record.dry_run and record.reverts == applied.history_id and record.summary.total_updates == 1


def test_revert_of_a_revert_restores_the_change(store: MemoryStore) -> None:
    applied = apply(store, append_line(store, "refund_status", "- one"))
    undone = revert(store, applied.history_id or "")
    redone = revert(store, undone.history_id)
    refund = experience(store, "refund_status")
    assert refund is not None and refund.content.endswith("- one") and refund.version == 4
    assert HistoryStore(store.paths).get(redone.history_id).reverts == undone.history_id


async def test_async_revert_accepts_a_unique_prefix(store: MemoryStore) -> None:
    applied = await apply_async(store, upsert(store, "gift_cards", "g"))
    result = await arevert(store, (applied.history_id or "")[-6:])
    assert result.reverted == applied.history_id
    assert experience(store, "gift_cards") is None


def test_unknown_record_is_a_clear_error(store: MemoryStore) -> None:
    with pytest.raises(OvtuiError, match="no history record matches"):
        revert(store, "nope")


def test_records_revert_newest_first_one_after_another(store: MemoryStore) -> None:
    original = _memory_texts(store)
    records = [
        apply(store, append_line(store, "refund_status", "- one"), upsert(store, "gift_cards", "g")),
        apply(
            store, append_line(store, "refund_status", "- two"), append_line(store, "gift_cards", "- more")
        ),
        apply(store, append_line(store, "refund_status", "- three"), delete(store, "address_change")),
    ]
    for record in reversed(records):
        result = revert(store, record.history_id or "")
        assert result.conflicts == []
    now = _memory_texts(store)
    assert set(now) == set(original)
    for path, text in original.items():  # every file says what it said; versions moved on
        old, new = parse_memory(text), parse_memory(now[path])
        assert new.content == old.content and new.without("version") == old.without("version"), path


def test_a_changed_field_that_matters_is_still_a_conflict(store: MemoryStore) -> None:
    first = apply(store, append_line(store, "refund_status", "- one"))
    path = store.paths.path_for(experience_uri("refund_status"))
    memory = parse_memory(path.read_text(encoding="utf-8"))
    path.write_text(
        render_memory(memory.content, {**memory.fields, "status": "deprecated"}), encoding="utf-8"
    )
    with pytest.raises(RevertConflictError, match=r"refund_status\.md"):
        revert(store, first.history_id or "")


def test_reverting_an_already_reverted_record_names_the_revert(store: MemoryStore) -> None:
    applied = apply(store, append_line(store, "refund_status", "- one"), upsert(store, "gift_cards", "g"))
    undone = revert(store, applied.history_id or "")
    before = snapshot(store.paths.root)
    with pytest.raises(OvtuiError, match=f"already reverted by {undone.history_id}$"):
        revert(store, applied.history_id or "", force=True)
    assert snapshot(store.paths.root) == before
    redone = revert(store, undone.history_id)  # undoing the revert makes the record revertible again
    assert revert(store, applied.history_id or "").reverted == applied.history_id
    assert redone.reverted == undone.history_id


def test_links_added_after_a_record_are_no_conflict_and_stay(store: MemoryStore) -> None:
    """Two applies cite the same trajectory: each adds its backlink there. The older one reverts
    on its own (relations are sets, not text): its backlink goes, the newer one's stays."""
    first = apply(store, append_line(store, "refund_status", "- one", evidence=[TRAJ]))
    second = apply(store, upsert(store, "gift_cards", "gift card text", evidence=[TRAJ]))
    path = store.paths.path_for(TRAJ)
    sources = [link["from_uri"] for link in parse_memory(path.read_text()).fields["backlinks"]]
    assert sources == [experience_uri("refund_status"), experience_uri("gift_cards")]
    revert(store, first.history_id or "")
    kept = parse_memory(path.read_text()).fields["backlinks"]
    assert [link["from_uri"] for link in kept] == [experience_uri("gift_cards")]
    refund = experience(store, "refund_status")
    assert refund is not None and "- one" not in refund.content and not refund.fields.get("links")
    revert(store, second.history_id or "")  # and the newer one after it: nothing is left linked
    assert not parse_memory(path.read_text()).fields.get("backlinks")
