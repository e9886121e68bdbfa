"""Opening a workspace: is this folder one, and finish an apply that a crash interrupted.

Every entry point (the CLI commands, the service behind train/eval and the app) opens through here,
so no reader sees half an apply after a crash.
"""

from __future__ import annotations

import os
from pathlib import Path

from ovtui.core.errors import LockTimeoutError, OvtuiError, UnsafePathError
from ovtui.storage.journal import recover
from ovtui.storage.locks import WorkspaceLock
from ovtui.storage.paths import BOOKKEEPING_FILES, BOOKKEEPING_FOLDERS, CONFIG_FILE, WorkspacePaths

# Recovery at start is best effort: if another process holds the lock it recovers before its apply.
RECOVERY_LOCK_TIMEOUT_S = 2.0


def require_workspace(root: Path) -> None:
    if not root.is_dir():
        raise OvtuiError(f"{root} is not a folder")
    if not (root / CONFIG_FILE).is_file() and not (root / "memories").is_dir():
        raise OvtuiError(
            f"{root} is not an ovtui workspace (no {CONFIG_FILE} and no memories/): "
            f"create one with `ovtui init {root}`"
        )
    refuse_leaving_links(root)


def refuse_leaving_links(root: Path) -> None:
    """A workspace whose bookkeeping (``.ovtui``, ``history``, ``runs``, the inbox, …) is a symbolic
    link leading outside it is refused: ovtui writes there."""
    real_root = os.path.realpath(root)
    for rel in (*BOOKKEEPING_FOLDERS, *BOOKKEEPING_FILES):
        path = os.path.join(root, *rel.split("/"))
        if not os.path.islink(path):
            continue
        target = os.path.realpath(path)
        if target != real_root and not target.startswith(real_root + os.sep):
            raise UnsafePathError(
                f"{path} is a symbolic link to {target}, outside the workspace; ovtui writes there, "
                "so it will not open this workspace: replace the link with a folder or file"
            )


def recover_on_start(paths: WorkspacePaths, lock: WorkspaceLock) -> str | None:
    """Finish or discard an interrupted apply under the workspace ``lock``; returns what was done,
    or None when nothing was (or the lock is busy: whoever holds it recovers)."""
    try:
        with lock.hold("recover", RECOVERY_LOCK_TIMEOUT_S):
            report = recover(paths)
    except LockTimeoutError:
        return None
    return report.describe() if report.changed else None
