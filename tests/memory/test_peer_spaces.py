"""Peer spaces (``peers/<peer_id>/…``, seed 004 §3.4) at the workspace level: a plan item's peer puts
its file in the peer's space and nowhere else, everything that maps a path back to a type knows
the prefix, compare-and-swap and revert work there as in the user's space, hostile peer ids never
become paths, and ``ovtui check`` reads the peers' files."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from plan_support import apply

from ovtui.checks.workspace import CheckReport, check_memories
from ovtui.core.domain import PolicyPlanItem
from ovtui.core.errors import MemoryFormatError, OvtuiError, UnsafePathError
from ovtui.memory.revert import revert
from ovtui.memory.store import MemoryStore
from ovtui.memory.targets import plan_target
from ovtui.memory.types import default_registry

REGISTRY = default_registry()
PREFIX = "viking://user/default/"
HOSTILE = ["../x", "a\x00b", "x" * 300, "con", ".hidden", "a/b", "a\\b", ""]


def item(memory_type: str, name: str, content: str, peer_id: str | None, **update: object) -> PolicyPlanItem:
    return PolicyPlanItem(
        kind="upsert",
        memory_type=memory_type,
        target_name=name,
        after_content=content,
        peer_id=peer_id,
        **update,
    )


def test_paths_in_a_peer_space_resolve_to_peer_enabled_types_only(store: MemoryStore) -> None:
    assert REGISTRY.for_path("peers/alice/memories/profile.md") is REGISTRY.get("profile")
    assert REGISTRY.for_path("peers/alice/memories/preferences/trains.md") is REGISTRY.get("preferences")
    assert REGISTRY.for_path("peers/alice/memories/entities/person/bob.md") is REGISTRY.get("entities")
    for rel in (
        "peers/alice/memories/cases/a.md",  # cases are never a peer's
        "peers/alice/memories/experiences/a.md",
        "peers/con/memories/profile.md",  # not a valid peer id
        "peers/alice/profile.md",
        "peers/memories/profile.md",
    ):
        assert REGISTRY.for_path(rel) is None, rel
    schema = store.schema_for_uri(f"{PREFIX}peers/alice/memories/preferences/trains.md")
    assert schema.memory_type == "preferences"
    with pytest.raises(UnsafePathError):
        store.schema_for_uri(f"{PREFIX}peers/alice/memories/cases/a.md")
    with pytest.raises(UnsafePathError):
        store.schema_for_uri(f"{PREFIX}peers/../memories/profile.md")


def test_a_plan_item_s_peer_chooses_the_space(store: MemoryStore) -> None:
    own = plan_target(store, item("profile", "profile", "- me", None))
    alice = plan_target(store, item("profile", "profile", "- Alice", "alice"))
    assert own.rel == "memories/profile.md"
    assert alice.rel == "peers/alice/memories/profile.md" and alice.uri == PREFIX + alice.rel
    topic = item("preferences", "trains", "- trains", "alice", metadata={"fields": {"topic": "trains"}})
    assert plan_target(store, topic).rel == "peers/alice/memories/preferences/alice/trains.md"
    with pytest.raises(OvtuiError, match="never a peer's"):
        plan_target(store, item("cases", "a_case", "x", "alice"))
    # an edit is never retargeted to another space
    wrong = item("profile", "profile", "x", "alice", target_uri=f"{PREFIX}memories/profile.md")
    with pytest.raises(OvtuiError, match="does not match"):
        plan_target(store, wrong)


def test_an_event_uri_must_lie_in_the_item_s_space(store: MemoryStore) -> None:
    uri = f"{PREFIX}peers/alice/memories/events/2026/11/30/party.md"
    existing = item("events", "party", "x", "alice", target_uri=uri, base_version=1)
    assert plan_target(store, existing).rel == "peers/alice/memories/events/2026/11/30/party.md"
    for peer in (None, "bob"):
        moved = existing.model_copy(update={"peer_id": peer})
        with pytest.raises(UnsafePathError, match="space"):
            plan_target(store, moved)


def memory_files(store: MemoryStore) -> list[str]:
    """Everything beside and in the workspace but ovtui's bookkeeping (the apply takes the lock)."""
    outside = store.paths.root.parent
    return sorted(str(p.relative_to(outside)) for p in outside.rglob("*") if ".ovtui" not in p.parts)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_hostile_peer_id_never_becomes_a_path(store: MemoryStore, hostile: str) -> None:
    before = memory_files(store)
    with pytest.raises(UnsafePathError):
        plan_target(store, item("profile", "profile", "x", hostile))
    result = apply(store, item("profile", "profile", "x", hostile))
    assert not result.written_uris and "peer_id" in result.item_errors[0].message
    assert result.history_id is None
    assert memory_files(store) == before


def test_peer_files_are_compare_and_swapped_recorded_and_reverted(store: MemoryStore) -> None:
    created = apply(store, item("profile", "profile", "- Alice", "alice"))
    path = store.paths.root / "peers/alice/memories/profile.md"
    assert created.written_uris == [f"{PREFIX}peers/alice/memories/profile.md"]
    assert not (store.paths.root / "memories/profile.md").exists()
    # a create of a file that exists by now is stale, in a peer's space as in the user's
    again = apply(store, item("profile", "profile", "- Alice again", "alice"))
    assert again.stale_items == [0] and "Alice again" not in path.read_text()
    current = store.read(path)
    edit = item(
        "profile",
        "profile",
        "- Alice\n- lives in Lyon",
        "alice",
        before_content=current.content,
        base_version=current.version,
    )
    path.write_text(path.read_text().replace("- Alice", "- Alice (edited by hand)"))
    stale = apply(store, edit)
    assert stale.stale_items == [0] and "Lyon" not in path.read_text()
    path.write_text(path.read_text().replace("- Alice (edited by hand)", "- Alice"))
    updated = apply(store, edit)
    assert updated.written_uris and "lives in Lyon" in path.read_text()
    revert(store, updated.history_id or "")
    assert "Lyon" not in path.read_text()
    revert(store, created.history_id or "")
    assert not path.exists()


def test_the_store_lists_peers_and_their_files(store: MemoryStore) -> None:
    apply(store, item("profile", "profile", "- Alice", "alice"))
    apply(store, item("preferences", "tea", "- tea", "bob", metadata={"fields": {"topic": "tea"}}))
    (store.paths.root / "peers/con").mkdir()  # a folder no peer id can name
    problems: list[MemoryFormatError] = []
    assert store.peers(problems) == ["alice", "bob"]
    assert len(problems) == 1 and "peers/con" in str(problems[0])
    assert [f.uri for f in store.load_type("profile", "alice").files] == [
        f"{PREFIX}peers/alice/memories/profile.md"
    ]
    assert [p.name for p in store.list_paths("preferences", "bob")] == ["tea.md"]
    assert store.load_type("profile").files == []  # the user's own space is untouched
    with pytest.raises(OvtuiError, match="never a peer's"):
        store.list_paths("cases", "alice")


def test_check_reads_the_peers_files(store: MemoryStore) -> None:
    apply(store, item("profile", "profile", "- Alice", "alice"))
    path = store.paths.root / "peers/alice/memories/profile.md"
    path.write_text(path.read_text().replace('"version": 1', '"version": "one"'))
    (store.paths.root / "peers/con").mkdir()
    outside = store.paths.root.parent / "outside"
    (outside / "memories").mkdir(parents=True)
    (outside / "memories/profile.md").write_text("not yours", encoding="utf-8")
    (store.paths.root / "peers/mallory").symlink_to(outside, target_is_directory=True)
    report = CheckReport()
    check_memories(store, report)
    assert report.memory_files["profile"] == 2
    assert any(
        p.path.endswith("peers/mallory/memories/profile.md") and "outside" in p.message
        for p in report.problems
    )
    problems = {(p.path, p.message.split(" ")[0]) for p in report.problems}
    assert ("peers/alice/memories/profile.md", "field") in problems
    assert any(p.path == "peers/con" and "reserved" in p.message for p in report.problems)


def test_a_peer_file_is_found_by_when_it_was_written(store: MemoryStore) -> None:
    when = datetime(2026, 11, 30, tzinfo=UTC)
    event = item("events", "party", "- a party", "alice")
    target = plan_target(store, event, when=when)
    assert target.rel == "peers/alice/memories/events/2026/11/30/party.md"
