"""ExperienceSetLoader.first: a preview of the first files by name, for a big list to show at once."""

from __future__ import annotations

from pathlib import Path

from ovtui.components.memory_store import ExperienceSetLoader
from ovtui.memory.fileformat import render_memory
from ovtui.workspace.store import MemoryStore


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
