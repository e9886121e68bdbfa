"""ExperienceSetLoader.first: a preview of the first files by name, for a big list to show at once."""

from __future__ import annotations

from pathlib import Path

from ovtui.core.fileformat import render_memory
from ovtui.memory.store import MemoryStore
from ovtui.train.components.experience_set_loader import ExperienceSetLoader


def test_first_reads_only_the_first_files_by_name_and_skips_a_broken_one(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path)
    folder = store.type_dir("experiences")
    folder.mkdir(parents=True)
    for name in ("charlie", "alpha", "delta", "echo"):
        fields = {"experience_name": name, "memory_type": "experiences", "status": "production", "version": 2}
        (folder / f"{name}.md").write_text(render_memory(f"## Situation\n- {name}", fields), encoding="utf-8")
    (folder / "bravo.md").write_bytes(b"\xff\xfe not text")

    loader = ExperienceSetLoader(store)
    assert [e.name for e in loader.first(3)] == ["alpha", "charlie"]  # bravo is unreadable
    assert [e.version for e in loader.first(10)] == [2, 2, 2, 2]
    full = loader.load_sync()
    assert len(full.policies) == 4 and full.metadata["problems"]  # the full load reports bravo


def _write(folder: Path, name: str, line: str) -> None:
    fields = {"experience_name": name, "memory_type": "experiences", "status": "production", "version": 1}
    (folder / f"{name}.md").write_text(render_memory(f"## Situation\n- {line}", fields), encoding="utf-8")


def test_a_reload_of_an_untouched_folder_is_the_same_snapshot_and_any_change_is_seen(tmp_path: Path) -> None:
    store = MemoryStore.open(tmp_path)
    folder = store.type_dir("experiences")
    folder.mkdir(parents=True)
    for name in ("alpha", "bravo", "charlie"):
        _write(folder, name, name)
    loader = ExperienceSetLoader(store)
    first = loader.load_sync()
    assert loader.load_sync(previous=first) is first  # shared, with whatever was derived from it

    text = (folder / "bravo.md").read_text(encoding="utf-8")
    with (folder / "bravo.md").open("r+", encoding="utf-8") as handle:  # edited in place: same inode
        handle.write(text.replace("- bravo", "- bravo, added by hand"))
    edited = loader.load_sync(previous=first)
    assert edited is not first and "added by hand" in edited.by_name()["bravo"].content
    assert loader.load_sync(previous=edited) is edited

    _write(folder, "delta", "delta")
    (folder / "alpha.md").unlink()
    changed = loader.load_sync(previous=edited)
    assert [p.name for p in changed.policies] == ["bravo", "charlie", "delta"]
    assert changed.model_dump() == loader.load_sync().model_dump()
