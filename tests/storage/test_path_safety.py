"""Names and paths from a plan never leave the workspace: each attempt is refused, nothing is written."""

from __future__ import annotations

from pathlib import Path

import pytest
from plan_support import append_line, apply, snapshot
from workspace_support import PREFIX, experience_uri

from ovtui.core.domain import PolicyPlanItem
from ovtui.core.errors import UnsafePathError
from ovtui.core.names import validate_name
from ovtui.memory.store import MemoryStore

BAD_NAMES = [
    "../evil",
    "..",
    "a/b",
    "a\\b",
    "/etc/passwd",
    "nul\x00byte",
    "tab\tname",
    "con",
    "COM1",
    "lpt9.notes",
    "x" * 200,
    ".hidden",
    "",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_experience_names_are_refused(store: MemoryStore, name: str) -> None:
    with pytest.raises(UnsafePathError):
        validate_name(name)
    before = snapshot(store.paths.root)
    item = PolicyPlanItem(kind="upsert", target_name=name, after_content="pwned")
    result = apply(store, item)
    assert result.item_errors and not result.item_errors[0].stale and not result.written_uris
    assert snapshot(store.paths.root) == before


@pytest.mark.parametrize(
    "uri",
    [
        f"{PREFIX}memories/trajectories/../../../outside.md",
        f"{PREFIX}memories/trajectories/%2e%2e/x.md",
        "viking://user/someone_else/memories/trajectories/x.md",
        "/etc/passwd",
        f"{PREFIX}memories/trajectories/a\x00.md",
        f"{PREFIX}ovtui.toml",
        experience_uri("address_change"),
    ],
)
def test_bad_evidence_uris_fail_the_item(store: MemoryStore, uri: str) -> None:
    before = snapshot(store.paths.root)
    result = apply(store, append_line(store, "refund_status", "- x", evidence=[uri]))
    assert result.item_errors and not result.written_uris, result
    assert snapshot(store.paths.root) == before


def test_symlinked_experience_pointing_outside_is_refused(
    store: MemoryStore, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "victim.md"
    outside.write_text("untouched", encoding="utf-8")
    link = store.paths.root / "memories/experiences/linked.md"
    link.symlink_to(outside)
    item = PolicyPlanItem(kind="upsert", target_name="linked", base_version=0, after_content="x")
    result = apply(store, item)
    assert result.errors == [
        "item 0 (linked): memories/experiences/linked.md leads outside the workspace (symbolic link)"
    ]
    assert outside.read_text(encoding="utf-8") == "untouched" and link.is_symlink()


def test_symlink_inside_the_workspace_is_not_followed(store: MemoryStore) -> None:
    target = store.paths.root / "memories/trajectories/refund_lookup_20261129120500.md"
    original = target.read_bytes()
    (store.paths.root / "memories/experiences/alias.md").symlink_to(target)
    item = PolicyPlanItem(kind="upsert", target_name="alias", base_version=0, after_content="x")
    result = apply(store, item)
    assert "symbolic link" in result.errors[0]
    assert target.read_bytes() == original


def test_symlinked_evidence_leading_outside_is_refused(
    store: MemoryStore, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside2") / "t.md"
    outside.write_text("secret", encoding="utf-8")
    (store.paths.root / "memories/trajectories/sneaky_20260101000000.md").symlink_to(outside)
    uri = f"{PREFIX}memories/trajectories/sneaky_20260101000000.md"
    before = snapshot(store.paths.root)
    result = apply(store, append_line(store, "refund_status", "- x", evidence=[uri]))
    assert result.errors == [
        "item 0 (refund_status): memories/trajectories/sneaky_20260101000000.md leads outside the workspace "
        "(symbolic link)"
    ]
    assert outside.read_text(encoding="utf-8") == "secret" and snapshot(store.paths.root) == before


def test_uri_paths_are_checked(store: MemoryStore, tmp_workspace: Path) -> None:
    with pytest.raises(UnsafePathError):
        store.paths.path_for(f"{PREFIX}../x")
    with pytest.raises(UnsafePathError):
        store.paths.inside(tmp_workspace.parent / "elsewhere")
