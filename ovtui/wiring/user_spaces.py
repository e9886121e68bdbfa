"""The other users of a workspace (``[workspace] users``): each has a space of its own,
``users/<user>/``, a workspace folder that holds only that user's memories (profile, preferences,
entities, events, cases, the experiences its sessions teach), sessions and history — as OpenViking
gives each user its own ``viking://user/<user>/`` space. The space is opened with the owner's
settings (the user and the user list aside), so one ``ovtui.toml`` governs every user; its own
``ovtui.toml`` (written once, when the space is made) lets the CLI and the app open it like any
workspace (``ovtui history --workspace <root>/users/bob``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ovtui.core.errors import OvtuiError
from ovtui.storage.config_file import save_config
from ovtui.storage.fsio import make_dirs
from ovtui.storage.paths import CONFIG_FILE, user_space
from ovtui.wiring.workspace import Workspace

if TYPE_CHECKING:
    from ovtui.core.config import OvtuiConfig

# What a new space holds from the start (as ``ovtui init`` makes a workspace's).
SPACE_FOLDERS = ("memories", "inbox/sessions")


def space_config(owner: OvtuiConfig, user: str) -> OvtuiConfig:
    """The owner's settings for ``user``'s space: the same, with ``user`` as its user."""
    config = owner.model_copy(deep=True)
    config.workspace.user, config.workspace.users = user, []
    return config


def open_user_space(owner: Workspace, user: str) -> Workspace:
    """``user``'s space in the workspace ``owner`` (made when it does not exist yet); ``user`` must
    be one of ``[workspace] users``."""
    if user not in owner.config.workspace.users:
        raise OvtuiError(f"user {user!r} is not in [workspace] users of {owner.root / CONFIG_FILE}")
    root = user_space(owner.root, user)
    config = space_config(owner.config, user)
    for folder in SPACE_FOLDERS:
        make_dirs(root / folder, root=owner.root)
    if not (root / CONFIG_FILE).exists():
        save_config(root, config)
    return Workspace(root, config)
