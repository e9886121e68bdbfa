"""The caches of vectors and abstracts: one append-only file per kind, shared by processes, whose
tail a crash cut is dropped, bounded by rewriting it with the newest records."""

from __future__ import annotations

from pathlib import Path

from ovtui.memory.retrieval.cache import DigestLog, digest
from ovtui.storage.paths import WorkspacePaths

REL = ".ovtui/embeddings/space.bin"


def test_records_survive_a_restart_and_a_cut_tail(tmp_path: Path) -> None:
    paths = WorkspacePaths(tmp_path)
    log = DigestLog(paths, REL, limit=1 << 20)
    log.put([(digest("a"), b"vector-a"), (digest("b"), b"vector-b")])
    with open(tmp_path / REL, "ab") as handle:  # a crash in the middle of the next record
        handle.write(digest("c")[:20])
    reopened = DigestLog(paths, REL, limit=1 << 20)
    assert reopened.get(digest("a")) == b"vector-a" and reopened.get(digest("c")) is None
    reopened.put([(digest("d"), b"vector-d")])  # the cut tail is dropped before the append
    third = DigestLog(paths, REL, limit=1 << 20)
    assert [third.get(digest(k)) for k in "abd"] == [b"vector-a", b"vector-b", b"vector-d"]
    assert len(third) == 3


def test_writers_see_each_other_and_the_file_stays_bounded(tmp_path: Path) -> None:
    paths = WorkspacePaths(tmp_path)
    one, two = DigestLog(paths, REL, limit=4_000), DigestLog(paths, REL, limit=4_000)
    one.load()
    two.put([(digest("from-two"), b"x" * 100)])
    one.put([(digest("from-one"), b"y" * 100)])  # catches up with two's record first
    assert one.get(digest("from-two")) == b"x" * 100
    for i in range(100):
        one.put([(digest(str(i)), b"z" * 100)])
    assert (tmp_path / REL).stat().st_size <= 4_000
    assert one.get(digest("99")) == b"z" * 100 and one.get(digest("0")) is None  # the newest kept
    two.put([(digest("after"), b"w")])  # the other writer notices the rewrite and reads it afresh
    assert (
        two.get(digest("99")) == b"z" * 100
        and DigestLog(paths, REL, limit=4_000).get(digest("after")) == b"w"
    )
