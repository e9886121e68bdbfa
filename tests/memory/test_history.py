"""History: listing newest first, filters, lazy records, and an index that repairs itself."""

from __future__ import annotations

import asyncio
import json

import pytest
from plan_support import append_line, apply, delete, upsert

from ovtui.core.domain import PolicyUpdatePlan
from ovtui.core.errors import OvtuiError
from ovtui.memory.history import HISTORY_ID, HistoryEntry, HistoryStore
from ovtui.memory.revert import revert
from ovtui.memory.store import MemoryStore
from ovtui.testing.big_workspace import write_history
from ovtui.train.components.policy_updater import DryRunPolicyUpdater


@pytest.fixture
def history(store: MemoryStore) -> HistoryStore:
    apply(store, append_line(store, "refund_status", "- first"))
    apply(store, upsert(store, "gift_cards", "gift card balance questions"))
    asyncio.run(
        DryRunPolicyUpdater(store).apply(PolicyUpdatePlan(items=[delete(store, "address_change")]), None)
    )
    return HistoryStore(store.paths)


def test_listing_is_newest_first_with_summaries(history: HistoryStore) -> None:
    entries = history.list()
    assert [e.kind for e in entries] == ["dry_run", "apply", "apply"]
    assert [e.id for e in entries] == sorted((e.id for e in entries), reverse=True)
    assert all(HISTORY_ID.match(e.id) for e in entries)
    dry, gift, first = entries
    assert (dry.deletes, dry.dry_run) == (1, True)
    assert gift.adds == 1 and gift.uris[0].endswith("experiences/gift_cards.md")
    assert first.updates == 1


def test_filters(history: HistoryStore) -> None:
    assert [e.kind for e in history.list(kind="dry_run")] == ["dry_run"]
    assert len(history.list(uri="memories/experiences/refund_status.md")) == 1
    assert len(history.list(uri="viking://user/default/memories/experiences/gift_cards.md")) == 1
    # Text is searched in the record too (file texts), case-insensitively.
    assert len(history.list(text="GIFT CARD BALANCE")) == 1
    assert history.list(text="no such words anywhere") == []
    assert len(history.list(limit=2)) == 2


def test_a_missing_index_line_is_restored(history: HistoryStore) -> None:
    lines = history.index_path.read_text(encoding="utf-8").splitlines(keepends=True)
    dropped = json.loads(lines[1])["id"]
    history.index_path.write_text(lines[0] + lines[2], encoding="utf-8")
    assert dropped in {e.id for e in history.list()}
    restored = [
        json.loads(line)["id"] for line in history.index_path.read_text(encoding="utf-8").splitlines()
    ]
    assert sorted(restored) == sorted(e.id for e in history.list())


def test_missing_index_and_torn_lines_are_rebuilt(history: HistoryStore) -> None:
    ids = [e.id for e in history.list()]
    history.index_path.unlink()
    assert [e.id for e in history.list()] == ids
    with history.index_path.open("a", encoding="utf-8") as handle:
        handle.write('{"id": "20260101T0000')  # torn by a crash
    assert [e.id for e in history.list()] == ids
    assert all(json.loads(line) for line in history.index_path.read_text(encoding="utf-8").splitlines())


def test_a_removed_record_folder_drops_out(history: HistoryStore) -> None:
    victim = history.list()[1].id
    (history.dir / victim / "memory_diff.json").unlink()
    (history.dir / victim).rmdir()
    assert victim not in {e.id for e in history.list()}
    assert victim not in history.index_path.read_text(encoding="utf-8")


def test_get_loads_one_record_and_names_bad_files(history: HistoryStore) -> None:
    entry = history.list()[0]
    assert history.get(entry.id).kind == "dry_run"
    with pytest.raises(OvtuiError, match="no history record 20200101T000000000000_000000"):
        history.get("20200101T000000000000_000000")
    with pytest.raises(OvtuiError, match="not a history record id"):
        history.get("../../etc/passwd")
    (history.dir / entry.id / "memory_diff.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(
        OvtuiError, match=f"history/{entry.id}/memory_diff.json: not a valid memory_diff record"
    ):
        history.get(entry.id)
    assert entry.id in {e.id for e in history.list()}  # the index still lists it


def test_resolve_by_unique_part(history: HistoryStore, store: MemoryStore) -> None:
    entry = history.list()[0]
    assert history.resolve(entry.id[-6:]) == entry.id
    with pytest.raises(OvtuiError, match="matches 3 history records"):
        history.resolve(entry.id[:4])
    result = revert(store, history.list(kind="apply")[0].id)
    assert history.list()[0].id == result.history_id and history.list()[0].reverts


def test_a_reader_sees_appends_and_rewrites_of_the_index(history: HistoryStore, store: MemoryStore) -> None:
    before = [e.id for e in history.list()]  # parsed once; later listings read only what was added
    apply(store, append_line(store, "refund_status", "- second"))
    after = [e.id for e in HistoryStore(store.paths).list()]
    assert len(after) == len(before) + 1 and after[1:] == before

    # A rewrite replaces the file: the reader must start over, not trust what it parsed before.
    lines = history.index_path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if before[-1] not in line]
    history.index_path.unlink()
    history.index_path.write_text("".join(kept), encoding="utf-8")
    assert [e.id for e in history.list()] == after  # the dropped line is repaired from its folder
    assert before[-1] in history.index_path.read_text(encoding="utf-8")


def test_newest_reads_the_last_lines_of_the_index_only(store: MemoryStore) -> None:
    history = HistoryStore(store.paths)
    assert history.newest(5) == []  # no index yet
    ids = write_history(store.paths.root, 30)
    assert [e.id for e in history.newest(5)] == ids[:-6:-1] == [e.id for e in history.list()[:5]]
    assert len(history.newest(100)) == 30  # the whole index, from its first line
    # Lines longer than a preview expects (a record touching many files): it reads further back.
    wide = [
        HistoryEntry(f"20991231T2359590000{i:02d}_abcdef", "", "apply", uris=["x" * 2_000]) for i in range(3)
    ]
    history.append_index(*wide)
    assert [e.id for e in history.newest(3)] == [e.id for e in reversed(wide)]
    assert [e.id for e in history.newest(4)][-1] == ids[-1]
