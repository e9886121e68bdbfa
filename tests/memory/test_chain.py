"""The history's hash chain: each record names the one before it; edits, removals, renames and a
history that predates the chain are each told apart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from plan_support import append_line, apply, upsert

from ovtui.core.errors import OvtuiError
from ovtui.memory.chain import ChainVerifier
from ovtui.memory.history import HistoryStore
from ovtui.memory.revert import revert
from ovtui.memory.store import MemoryStore
from ovtui.storage.paths import HISTORY_CHAIN_FILE


def _three(store: MemoryStore) -> list[str]:
    return [
        str(apply(store, upsert(store, "gift_cards", "gift cards")).history_id),
        str(apply(store, append_line(store, "gift_cards", "- quote the balance")).history_id),
        str(apply(store, append_line(store, "gift_cards", "- never read out the code")).history_id),
    ]


def _record(store: MemoryStore, record_id: str) -> Path:
    return HistoryStore(store.paths).record_path(record_id)


def _problems(store: MemoryStore) -> list[str]:
    return ChainVerifier(store).verify().problems


def test_applied_records_form_a_chain_that_verifies(store: MemoryStore) -> None:
    ids = _three(store)
    report = ChainVerifier(store).verify()
    assert report.ok and report.chained == 3 and report.earlier == 0
    links = [json.loads(_record(store, i).read_text())["chain"] for i in ids]
    assert [link["seq"] for link in links] == [1, 2, 3]
    assert links[1]["previous"] == ids[0] and links[1]["previous_digest"] == links[0]["digest"]
    head = json.loads((store.paths.root / HISTORY_CHAIN_FILE).read_text())
    assert (head["seq"], head["id"], head["digest"]) == (3, ids[2], links[2]["digest"])


def test_an_edited_record_is_named(store: MemoryStore) -> None:
    ids = _three(store)
    path = _record(store, ids[1])
    path.write_text(path.read_text().replace("quote the balance", "read out the code"))
    where = f"history/{ids[1]}/memory_diff.json"
    assert _problems(store) == [f"{where}: edited after it was written (its digest does not match)"]


def test_a_removed_record_leaves_a_gap_and_a_removed_newest_one_a_short_chain(store: MemoryStore) -> None:
    ids = _three(store)
    shutil.rmtree(_record(store, ids[1]).parent)
    assert _problems(store) == [
        f"history: the record at chain position 2 (after history/{ids[0]}/memory_diff.json) "
        "is missing: removed"
    ]
    shutil.rmtree(_record(store, ids[2]).parent)
    assert _problems(store) == [
        f"{HISTORY_CHAIN_FILE}: the chain ends at {ids[2]} (position 3), but only 1 record(s) are there: "
        "the newest removed"
    ]


def test_reordered_records_are_named(store: MemoryStore) -> None:
    ids = _three(store)
    first, second = _record(store, ids[0]), _record(store, ids[1])
    a, b = first.read_bytes(), second.read_bytes()
    first.write_bytes(b)
    second.write_bytes(a)
    problems = _problems(store)
    assert (
        f"history/{ids[0]}/memory_diff.json: written as record {ids[1]!r}, found in another folder "
        "(renamed or swapped)" in problems
    )
    assert any(p.startswith(f"history/{ids[1]}/memory_diff.json: written as record") for p in problems)


def test_a_history_that_predates_the_chain_is_counted_then_guarded(store: MemoryStore) -> None:
    old = _three(store)
    for record_id in old:  # as an older ovtui wrote them: no chain fields, no head
        path = _record(store, record_id)
        data = json.loads(path.read_text())
        del data["chain"]
        path.write_text(json.dumps(data, indent=2))
    (store.paths.root / HISTORY_CHAIN_FILE).unlink()
    before = ChainVerifier(store).verify()
    assert before.ok and before.chained == 0 and before.earlier == 3
    new = str(apply(store, append_line(store, "gift_cards", "- one more")).history_id)
    after = ChainVerifier(store).verify()
    assert after.ok and (after.chained, after.earlier) == (1, 3)
    assert "3 earlier record(s) predate the chain" in after.summary()
    assert json.loads(_record(store, new).read_text())["chain"]["earlier"] == 3
    path = _record(store, old[0])
    path.write_text(path.read_text().replace("gift cards", "gift cards, any amount"))
    assert _problems(store) == [
        f"history: the 3 record(s) that predate the chain (before history/{new}/memory_diff.json) were "
        "changed since it began: 3 found, edited, removed or added"
    ]
    with pytest.raises(OvtuiError, match="not even with --force: history: the 3 record"):
        revert(store, old[0], force=True)


def test_a_missing_head_is_reported_and_the_next_apply_continues_the_chain(store: MemoryStore) -> None:
    ids = _three(store)
    (store.paths.root / HISTORY_CHAIN_FILE).unlink()
    assert _problems(store) == [f"{HISTORY_CHAIN_FILE}: missing, though 3 record(s) are chained"]
    new = str(apply(store, append_line(store, "gift_cards", "- one more")).history_id)
    assert ChainVerifier(store).verify().ok
    assert json.loads(_record(store, new).read_text())["chain"]["previous"] == ids[2]
