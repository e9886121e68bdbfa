"""Subcommands of ``ovtui``: each module has ``add_parsers(sub)`` and sets ``handler`` on its parsers.

``open_store`` is what every command that works on a workspace calls first: it checks the folder,
reads the user from ``ovtui.toml`` and finishes an apply that a crash interrupted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ovtui.config import CONFIG_NAME, load_config
from ovtui.errors import ConfigError, LockTimeoutError, OvtuiError
from ovtui.workspace.journal import recover
from ovtui.workspace.paths import WorkspacePaths
from ovtui.workspace.store import MemoryStore

# Recovery at start is best effort: if another process holds the lock it recovers before its apply.
RECOVERY_LOCK_TIMEOUT_S = 2.0


def open_store(workspace: Path | str, *, strict_config: bool = True, recover_now: bool = True) -> MemoryStore:
    root = Path(workspace)
    if not root.is_dir():
        raise OvtuiError(f"{root} is not a folder")
    if not (root / CONFIG_NAME).is_file() and not (root / "memories").is_dir():
        raise OvtuiError(f"{root} is not an ovtui workspace (no {CONFIG_NAME} and no memories/)")
    try:
        user = load_config(root).workspace.user
    except ConfigError:
        if strict_config:
            raise
        user = "default"  # `ovtui check` reports the config problem itself
    store = MemoryStore(WorkspacePaths(root, user))
    if recover_now:
        recover_on_start(store)
    return store


def recover_on_start(store: MemoryStore) -> None:
    try:
        with store.lock.hold("recover", RECOVERY_LOCK_TIMEOUT_S):
            report = recover(store.paths)
    except LockTimeoutError:
        return
    if report.changed:
        print(f"ovtui: recovery: {report.describe()}", file=sys.stderr)
