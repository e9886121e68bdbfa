"""The experiences cache: a new process takes what the files parsed to from one file, re-reads only
what changed since, and never trusts an entry it cannot vouch for."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovtui.core.fileformat import render_memory
from ovtui.memory.store import MemoryStore
from ovtui.storage.faults import Fault, set_fault
from ovtui.storage.paths import EXPERIENCE_CACHE_FILE
from ovtui.train.components.experience_set_loader import ExperienceSetLoader


def _write(folder: Path, name: str, line: str, *, experience_name: str | None = None) -> None:
    fields = {
        "experience_name": experience_name or name,
        "memory_type": "experiences",
        "status": "production",
        "version": 3,
        "links": ["viking://user/default/memories/trajectories/t1.md"],
    }
    text = render_memory(f"## Situation\n- {line} ✓", fields)
    (folder / f"{name}.md").write_text(text, encoding="utf-8")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    store = MemoryStore.open(tmp_path / "ws")
    folder = store.type_dir("experiences")
    folder.mkdir(parents=True)
    for name in ("alpha", "bravo", "charlie", "delta"):
        _write(folder, name, f"when {name}, check the order")
    _write(folder, "echo", "named for another file", experience_name="foxtrot")
    (folder / "golf.md").write_bytes(b"\xff\xfe not text")
    return folder


class Reads:
    """Counts the memory files a loader reads (the store's two ways of reading one)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.files: list[str] = []
        read_regular, read = MemoryStore.read_regular, MemoryStore.read

        def counted_regular(store: MemoryStore, path: str, rel: str) -> str:
            self.files.append(os.path.basename(path))
            return read_regular(store, path, rel)

        def counted_read(store: MemoryStore, path: Path) -> object:
            self.files.append(path.name)
            return read(store, path)

        monkeypatch.setattr(MemoryStore, "read_regular", counted_regular)
        monkeypatch.setattr(MemoryStore, "read", counted_read)

    def taken(self) -> list[str]:
        files, self.files = sorted(set(self.files)), []
        return files


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Reads:
    return Reads(monkeypatch)


@pytest.fixture(autouse=True)
def no_fault() -> Iterator[None]:
    yield
    set_fault(None)


def _fresh(folder: Path) -> ExperienceSetLoader:
    """A loader as a new process builds it: nothing of an earlier one in memory."""
    return ExperienceSetLoader(MemoryStore.open(folder.parents[1]))


def test_a_new_process_reads_the_cache_and_only_the_files_changed_since(folder: Path, reads: Reads) -> None:
    first = _fresh(folder).load_sync()
    assert len(reads.taken()) == 6 and (folder.parents[1] / EXPERIENCE_CACHE_FILE).is_file()

    again = _fresh(folder).load_sync()
    assert reads.taken() == ["golf.md"]  # an unreadable file is never cached: it is tried each time
    assert again.model_dump() == first.model_dump()
    problems = again.metadata["problems"]
    assert problems == first.metadata["problems"] and len(problems) == 2
    assert any("golf.md" in p for p in problems) and any("'foxtrot'" in p for p in problems)

    # Edited in place to the same size, its modification time put back: the change time still says.
    bravo = folder / "bravo.md"
    before = bravo.stat()
    text = bravo.read_text(encoding="utf-8")
    with bravo.open("r+", encoding="utf-8") as handle:
        handle.write(text.replace("check the order", "check the ORDER"))
    os.utime(bravo, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert bravo.stat().st_size == before.st_size and bravo.stat().st_mtime_ns == before.st_mtime_ns
    _write(folder, "hotel", "a new one")
    (folder / "alpha.md").unlink()

    changed = _fresh(folder).load_sync()
    assert reads.taken() == ["bravo.md", "golf.md", "hotel.md"]
    assert "check the ORDER" in changed.by_name()["bravo"].content
    assert [p.name for p in changed.policies] == ["bravo", "charlie", "delta", "echo", "hotel"]
    assert changed.model_dump() == _fresh(folder).load_sync().model_dump()
    reads.taken()
    os.remove(folder.parents[1] / EXPERIENCE_CACHE_FILE)
    assert changed.model_dump() == _fresh(folder).load_sync().model_dump()  # as the files say


def test_an_entry_the_cache_cannot_vouch_for_is_read_from_its_file(folder: Path, reads: Reads) -> None:
    truth = _fresh(folder).load_sync().model_dump()
    cache = folder.parents[1] / EXPERIENCE_CACHE_FILE
    header, *entries = cache.read_bytes().splitlines()
    by_file = {json.loads(line)["file"]: json.loads(line) for line in entries}

    # An entry naming one file with another's URI, one with garbage, one cut short: each file is read.
    forged = by_file["alpha.md"]
    forged["experience"] = {**by_file["bravo.md"]["experience"], "content": "INJECTED"}
    cut_short = json.dumps(by_file["charlie.md"]).encode()[:40]
    lines = [header, json.dumps(forged).encode(), b"{not json", cut_short]
    lines += [json.dumps(by_file[name]).encode() for name in ("bravo.md", "delta.md", "echo.md")]
    cache.write_bytes(b"\n".join(lines))
    reads.taken()
    loaded = _fresh(folder).load_sync()
    assert reads.taken() == ["alpha.md", "charlie.md", "golf.md"]
    assert loaded.model_dump() == truth and "INJECTED" not in str(loaded.model_dump())

    # Parsed by other code (another parser's fingerprint): nothing of it is used, and it is rewritten.
    other = json.loads(header)
    cache.write_bytes(b"\n".join([json.dumps({**other, "parser": "0" * 32}).encode(), *entries]))
    assert _fresh(folder).load_sync().model_dump() == truth
    assert len(reads.taken()) == 6 and json.loads(cache.read_bytes().splitlines()[0]) == other


def test_a_cache_that_cannot_be_written_or_leads_outside_costs_only_time(
    folder: Path, tmp_path: Path
) -> None:
    cache = folder.parents[1] / EXPERIENCE_CACHE_FILE
    set_fault(Fault.parse(f"ENOSPC:write:{cache}"))
    full = _fresh(folder).load_sync()
    assert len(full.policies) == 5 and not cache.exists()
    assert not [p for p in cache.parent.iterdir() if p.name.endswith(".tmp")]  # no temp file left
    set_fault(None)

    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("precious\n", encoding="utf-8")
    cache.symlink_to(outside)
    assert _fresh(folder).load_sync().model_dump() == full.model_dump()
    assert outside.read_text(encoding="utf-8") == "precious\n" and cache.is_symlink()


def test_a_folder_no_process_read_is_listed_unread_until_the_cache_holds_it(
    folder: Path, reads: Reads
) -> None:
    """``unparsed``: the files by URI with their change times, sorted as the snapshot sorts them,
    read from none of them, while no cache exists; below the count asked for, or once a load has
    written the cache, nothing."""
    loader = _fresh(folder)
    listed = loader.unparsed(at_least=6)
    prefix = "viking://user/default/memories/experiences/"
    names = ["alpha", "bravo", "charlie", "delta", "echo", "golf"]
    assert listed is not None and list(listed) == [f"{prefix}{n}.md" for n in names]
    assert listed[f"{prefix}alpha.md"] == (folder / "alpha.md").stat().st_mtime_ns / 1e9
    assert reads.taken() == []  # names and times only: no file read
    assert loader.unparsed(at_least=7) is None  # fewer than asked for
    loaded = loader.load_sync()
    assert [e.uri for e in loaded.policies] == [u for u in listed if not u.endswith("golf.md")]
    assert (folder.parents[1] / EXPERIENCE_CACHE_FILE).is_file()
    assert _fresh(folder).unparsed(at_least=1) is None
