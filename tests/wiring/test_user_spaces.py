"""A declared user's space (``users/<user>/``): made on first opening with the owner's settings,
never for a user not declared, never through a link leading out of the workspace, and its own
``ovtui.toml`` is not written over once there."""

from __future__ import annotations

from pathlib import Path

import pytest
from workspace_support import build_sample_workspace

from ovtui.core.errors import OvtuiError, UnsafePathError
from ovtui.storage.config_file import load_config
from ovtui.wiring.user_spaces import open_user_space
from ovtui.wiring.workspace import Workspace


@pytest.fixture
def owner(tmp_path: Path) -> Workspace:
    root = build_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('user = "default"', 'user = "alice"\nusers = ["bob"]'))
    return Workspace(root)


def test_a_declared_user_s_space_is_a_workspace_of_its_own(owner: Workspace) -> None:
    space = open_user_space(owner, "bob")
    assert space.root == owner.root / "users/bob"
    assert space.config.workspace.user == "bob" and space.config.workspace.users == []
    assert space.config.review == owner.config.review  # the owner's settings govern it
    assert space.parts.paths.uri_prefix == "viking://user/bob/"
    assert load_config(space.root).workspace.user == "bob"  # the CLI and the app open it too


def test_the_space_s_own_config_is_not_written_over(owner: Workspace) -> None:
    open_user_space(owner, "bob")
    config = owner.root / "users/bob/ovtui.toml"
    edited = config.read_text() + "\n# a person's note\n"
    config.write_text(edited)
    open_user_space(owner, "bob")
    assert config.read_text() == edited


def test_a_user_not_declared_gets_no_space(owner: Workspace) -> None:
    with pytest.raises(OvtuiError, match="'carol' is not in \\[workspace\\] users"):
        open_user_space(owner, "carol")
    assert not (owner.root / "users/carol").exists()


def test_a_space_linked_out_of_the_workspace_is_refused(owner: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (owner.root / "users").mkdir()
    (owner.root / "users/bob").symlink_to(outside)
    with pytest.raises(UnsafePathError, match="leads outside the workspace"):
        open_user_space(owner, "bob")
    assert list(outside.iterdir()) == []
