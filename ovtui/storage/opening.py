"""Opening a workspace: is this folder one, and finish an apply that a crash interrupted.

Every entry point (the CLI commands, the service behind train/eval and the app) opens through here,
so no reader sees half an apply after a crash.
"""

from __future__ import annotations

import os
from pathlib import Path

from ovtui.core.errors import LockTimeoutError, OvtuiError, UnsafePathError
from ovtui.storage.faults import os_error_line
from ovtui.storage.journal import needs_recovery, recover
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


def recover_on_start(paths: WorkspacePaths, lock: WorkspaceLock, *, reading: bool = False) -> str | None:
    """Finish or discard an interrupted apply under the workspace ``lock``; returns what was done,
    or None when nothing was (or the lock is busy: whoever holds it recovers).

    The lock is taken only when there is something to recover, so a workspace on a full or
    read-only disk still opens. ``reading``: the caller only reads (check, history, review list),
    so a recovery the disk refuses is said in the returned line instead of stopping it; a caller
    that writes gets the error (one line naming the file), and the next opening finishes the work.
    """
    if not needs_recovery(paths):
        return None
    try:
        with lock.hold("recover", RECOVERY_LOCK_TIMEOUT_S):
            report = recover(paths)
    except LockTimeoutError:
        return None
    except (OSError, OvtuiError) as exc:
        if not reading or isinstance(exc, UnsafePathError):
            raise
        why = os_error_line(exc, paths.relative) if isinstance(exc, OSError) else str(exc)
        return (
            f"an interrupted apply could not be finished ({why}); what is shown may be half of it "
            "until the workspace is opened again with room to write"
        )
    return report.describe() if report.changed else None
