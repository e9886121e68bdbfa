"""The workspace's retrieval index: every memory file of every type (the user's and each peer's),
kept current by refreshes that read only what changed; what it never serves; its scores."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from workspace_support import build_workspace, experience_uri

from ovtui.core.fileformat import render_memory
from ovtui.memory.retrieval.index import Filters, MemoryIndex
from ovtui.memory.retrieval.ranking import Fusion, RankedIndex
from ovtui.memory.search import stemmed_tokens as tokenize
from ovtui.memory.store import MemoryStore

LATER = 4_000_000_000.0  # a clock long after every file's mtime: no folder is "racy"


def write_experience(root: Path, name: str, body: str, **fields: object) -> Path:
    path = root / "memories" / "experiences" / f"{name}.md"
    text = render_memory(body, {"experience_name": name, "memory_type": "experiences", **fields})
    tmp = path.with_name(f".{name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)  # as ovtui writes: a new inode, the folder's mtime moves
    return path


def names(index: MemoryIndex, query: str, filters: Filters | None = None, limit: int = 5) -> list[str]:
    return [h.doc.name for h in index.search(tokenize(query), filters or Filters(), limit=limit)]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return build_workspace(tmp_path / "ws")


def test_every_type_and_peer_is_indexed_and_filtered(workspace: Path) -> None:
    (workspace / "memories" / "profile.md").write_text(render_memory("Ana likes window seats", {}))
    peer = workspace / "peers" / "bob" / "memories" / "preferences"
    peer.mkdir(parents=True)
    # one preference in ovtui's former layout (preferences/<topic>.md), one in OpenViking's: both served
    (peer / "seats.md").write_text(render_memory("Bob likes aisle seats", {"topic": "seats"}))
    (peer / "bob").mkdir()
    (peer / "bob" / "meals.md").write_text(
        render_memory("Bob eats vegan meals", {"user": "bob", "topic": "meals"})
    )
    index = MemoryIndex(MemoryStore.open(workspace), clock=lambda: LATER)
    index.refresh()
    types = {h.doc.memory_type for h in index.search(tokenize("cancel refund seats"), Filters(), limit=50)}
    assert {"experiences", "trajectories", "profile"} <= types
    # A peer's memories only for a caller who may see the peer.
    assert names(index, "aisle seats") == ["profile"]
    seen = Filters(peer_visible=lambda peer: peer in (None, "bob"))
    assert names(index, "aisle seats", seen)[0] == "seats"
    assert names(index, "vegan meals", seen)[0] == "meals"
    only = Filters(memory_types=frozenset({"experiences"}))
    assert set(names(index, "cancel refund", only)) == {"reservation_cancellation", "refund_status"}
    under = Filters(prefixes=(experience_uri("refund_status"),))
    assert names(index, "refund", under) == ["refund_status"]


def test_deprecated_and_archived_experiences_are_never_served(workspace: Path) -> None:
    index = MemoryIndex(MemoryStore.open(workspace), clock=lambda: LATER)
    index.refresh()
    assert "refund_status" in names(index, "refund")
    write_experience(workspace, "refund_status", "## Situation\n- refund", status="deprecated")
    index.refresh()
    assert "refund_status" not in names(index, "refund")
    assert index.get(experience_uri("refund_status")) is not None  # indexed, just not served
    assert names(index, "refund", Filters(statuses=frozenset({"deprecated"}))) == []


def test_a_refresh_reads_only_what_changed(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore.open(workspace)
    index = MemoryIndex(store, clock=lambda: LATER)
    index.refresh()
    read: list[str] = []
    original = store.read_regular

    def counting(path: str, rel: str) -> str:
        read.append(rel)
        return original(path, rel)

    monkeypatch.setattr(store, "read_regular", counting)
    index.refresh()
    assert read == []  # nothing changed: a stat per folder, no file read
    write_experience(workspace, "seat_choice", "## Situation\n- The customer wants a window seat")
    (workspace / "memories" / "experiences" / "address_change.md").unlink()
    index.refresh()
    assert read == ["memories/experiences/seat_choice.md"]
    assert names(index, "window seat") == ["seat_choice"]
    assert index.get(experience_uri("address_change")) is None
    assert "address_change" not in names(index, "address identity")


def test_a_second_write_in_the_same_clock_tick_is_not_missed(workspace: Path) -> None:
    folder = workspace / "memories" / "experiences"
    index = MemoryIndex(MemoryStore.open(workspace))  # the real clock: a folder just written is racy
    index.refresh()
    before = os.stat(folder).st_mtime_ns
    write_experience(workspace, "late_one", "## Situation\n- Customer asks about parking")
    os.utime(folder, ns=(before, before))  # as if the write fell in the tick of the last listing
    index.refresh()
    assert names(index, "parking") == ["late_one"]


def test_an_edit_in_place_is_caught_by_the_sweep(workspace: Path) -> None:
    path = workspace / "memories" / "experiences" / "address_change.md"
    folder = path.parent
    clock = [LATER]
    index = MemoryIndex(MemoryStore.open(workspace), sweep_every=60.0, clock=lambda: clock[0])
    index.refresh()
    stamp = os.stat(folder).st_mtime_ns
    with open(path, "a", encoding="utf-8") as handle:  # same inode, the folder's mtime unchanged
        handle.write("\n")
    path.write_text(
        render_memory("## Situation\n- Customer moved to a lighthouse", {"experience_name": "address_change"})
    )
    os.utime(folder, ns=(stamp, stamp))
    index.refresh()
    assert names(index, "lighthouse") == []  # a refresh alone does not stat every file
    clock[0] += 61
    index.refresh()
    assert names(index, "lighthouse") == ["address_change"]


def test_peers_come_and_go(workspace: Path) -> None:
    index = MemoryIndex(MemoryStore.open(workspace), clock=lambda: LATER)
    index.refresh()
    everyone = Filters(peer_visible=lambda peer: True)
    folder = workspace / "peers" / "carol" / "memories" / "entities" / "people"
    folder.mkdir(parents=True)
    (folder / "dave.md").write_text(render_memory("Dave is Carol's brother, a pilot", {"name": "dave"}))
    index.refresh()
    assert names(index, "pilot brother", everyone) == ["dave"]
    shutil.rmtree(workspace / "peers" / "carol")
    index.refresh()
    assert names(index, "pilot brother", everyone) == []


def test_links_bad_files_and_hidden_files_are_not_indexed(workspace: Path, tmp_path: Path) -> None:
    folder = workspace / "memories" / "experiences"
    outside = tmp_path / "outside.md"
    outside.write_text(render_memory("secret zebra plans", {}))
    (folder / "linked.md").symlink_to(outside)
    (folder / "broken.md").write_text("zebra\n<!-- MEMORY_FIELDS\n{not json\n-->")
    (folder / ".hidden.md").write_text(render_memory("zebra hidden", {}))
    (folder / "binary.md").write_bytes(b"zebra\x00\x01")
    index = MemoryIndex(MemoryStore.open(workspace), clock=lambda: LATER)
    index.refresh()
    assert names(index, "zebra") == []
    assert set(index.problems) >= {
        "memories/experiences/linked.md",
        "memories/experiences/broken.md",
        "memories/experiences/binary.md",
    }
    fixed = folder / ".broken.tmp"
    fixed.write_text(render_memory("zebra fixed", {}))
    os.replace(fixed, folder / "broken.md")  # a fixed file is read again
    index.refresh()
    assert names(index, "zebra") == ["broken"] and "memories/experiences/broken.md" not in index.problems


def test_scores_mean_the_same_whatever_the_index_size() -> None:
    small = RankedIndex.of([("a", tokenize("cancel the booking")), ("b", tokenize("refund a payment"))])
    big = RankedIndex.of(
        [
            ("a", tokenize("cancel the booking")),
            *((f"n{i}", tokenize(f"note number {i}")) for i in range(500)),
        ]
    )
    [in_small] = small.rank(tokenize("cancel booking"), limit=1)
    [in_big] = big.rank(tokenize("cancel booking"), limit=1)
    assert 0 < in_small.score < 1 and 0 < in_big.score < 1
    # The same document, holding each word once, scores alike in both; a threshold keeps or drops it.
    assert abs(in_small.score - in_big.score) < 0.1
    assert big.rank(tokenize("cancel booking"), limit=1, threshold=in_big.score) == []
    # A document holding part of the query scores less; a word no document holds (an id) changes nothing.
    half = RankedIndex.of([("a", tokenize("cancel the booking")), ("b", tokenize("cancel a meal"))])
    assert [r.key for r in half.rank(tokenize("cancel booking"), limit=2)] == ["a", "b"]
    [with_id] = big.rank(tokenize("cancel booking B53N8D"), limit=1)
    assert with_id.score == pytest.approx(in_big.score)


def test_fusion_brings_in_what_only_the_vectors_match() -> None:
    numpy = pytest.importorskip("numpy")
    index = RankedIndex(Fusion(weight=0.5))
    index.put("cancel", tokenize("cancel the booking"))
    index.put("meal", tokenize("a vegetarian meal"))
    index.put_vector("cancel", numpy.array([1.0, 0.0], dtype=numpy.float32))
    index.put_vector("meal", numpy.array([0.0, 1.0], dtype=numpy.float32))
    # "call off my trip" shares no word with either; its vector is the cancellation's.
    query = numpy.array([1.0, 0.0], dtype=numpy.float32)
    assert index.rank(tokenize("call off my trip"), limit=2) == []
    [hit] = index.rank(tokenize("call off my trip"), limit=2, vector=query)
    assert hit.key == "cancel" and hit.score == pytest.approx(0.5)
    rrf = RankedIndex(Fusion(method="rrf"))
    for key in ("cancel", "meal"):
        rrf.put(key, tokenize("cancel the booking" if key == "cancel" else "a vegetarian meal"))
        rrf.put_vector(key, numpy.array([1.0, 0.0] if key == "cancel" else [0.0, 1.0], dtype=numpy.float32))
    first = rrf.rank(tokenize("cancel booking"), limit=2, vector=query)
    assert [r.key for r in first] == ["cancel"] and first[0].score == pytest.approx(1.0)
