"""Classified, debounced changes of a workspace folder, for the app (and anything else that watches).

``watch_workspace`` wraps ``watchfiles.awatch`` on the workspace root and yields one
``WorkspaceChanges`` per burst of file events: which kinds of things changed (an experience, a
pending plan, a history record, the config, a new inbox file) and the workspace-relative paths.
Temp files of atomic writes, the lock, logs, runs and trajectories are ignored, so a training run
writing hundreds of files does not wake the watcher for nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath

from watchfiles import Change, awatch

from ovtui.storage.fsio import is_temp_name
from ovtui.storage.paths import (
    CONFIG_FILE,
    HIDDEN_MEMORY_NAMES,
    INDEX_FILE,
    PEERS_DIR,
    RECORD_FILE,
    WorkspacePaths,
)

# How long a burst may keep growing before it is reported, and the quiet gap that ends one (ms).
DEFAULT_DEBOUNCE_MS = 400
DEFAULT_STEP_MS = 50
READY_PROBE_MS = 50  # how soon a caller waiting for ``ready`` hears of it


class ChangeKind(StrEnum):
    EXPERIENCE = "experience"
    # A memory file of another type (profile, preferences, events, ...; not trajectories), in the
    # user's own space or a peer's (``peers/<peer_id>/memories/…``).
    MEMORY = "memory"
    PENDING = "pending"
    HISTORY = "history"
    INBOX = "inbox"
    CONFIG = "config"
    SESSION = "session"


@dataclass(frozen=True)
class WorkspaceChanges:
    """One debounced burst: kind → sorted workspace-relative POSIX paths that changed."""

    paths: dict[ChangeKind, tuple[str, ...]] = field(default_factory=dict)
    # Inbox files that appeared (added or renamed into place); removals there are not news.
    new_inbox_files: tuple[str, ...] = ()

    @property
    def kinds(self) -> frozenset[ChangeKind]:
        return frozenset(self.paths)

    def __contains__(self, kind: object) -> bool:
        return kind in self.paths

    def __bool__(self) -> bool:
        return bool(self.paths)


def classify(relative: str) -> ChangeKind | None:
    """The kind of a workspace-relative POSIX path, or None when the app does not care about it."""
    parts = PurePosixPath(relative).parts
    if not parts or is_temp_name(parts[-1]):
        return None
    name = parts[-1]
    if relative == CONFIG_FILE:
        return ChangeKind.CONFIG
    memory_file = name.endswith(".md") and not name.startswith(".") and name not in HIDDEN_MEMORY_NAMES
    if parts[:2] == ("memories", "experiences") and len(parts) == 3:
        return ChangeKind.EXPERIENCE if memory_file else None
    # Trajectories are left out: a run adds one per rollout, and no pending item edits them.
    if parts[0] == "memories" and len(parts) >= 2 and parts[1] not in ("experiences", "trajectories"):
        return ChangeKind.MEMORY if memory_file else None
    if parts[0] == PEERS_DIR and len(parts) >= 4 and parts[2] == "memories":  # a peer's space
        return ChangeKind.MEMORY if memory_file else None
    if parts[:2] == (".ovtui", "pending") and len(parts) == 3 and name.endswith(".json"):
        return ChangeKind.PENDING
    if parts[0] == "history" and (name == RECORD_FILE or relative == f"history/{INDEX_FILE}"):
        return ChangeKind.HISTORY
    if parts[0] == "sessions" and name in ("meta.json", "messages.jsonl", "memory_diff.json"):
        return ChangeKind.SESSION
    if relative == ".ovtui/tasks/jobs.jsonl":
        return ChangeKind.SESSION
    if parts[:2] == ("inbox", "rollouts") and len(parts) == 3 and name.endswith(".json"):
        return ChangeKind.INBOX
    if parts[:2] == ("inbox", "sessions") and len(parts) == 3 and name.endswith(".jsonl"):
        return ChangeKind.INBOX
    return None


def summarise(root: Path, raw: set[tuple[Change, str]]) -> WorkspaceChanges:
    """Group raw watchfiles events under ``root`` by kind (pure: the unit tests drive it directly)."""
    grouped: dict[ChangeKind, set[str]] = {}
    inbox_new: set[str] = set()
    for change, path in raw:
        try:
            relative = Path(path).relative_to(root).as_posix()
        except ValueError:
            continue
        kind = classify(relative)
        if kind is None:
            continue
        grouped.setdefault(kind, set()).add(relative)
        if kind is ChangeKind.INBOX and change is not Change.deleted:
            inbox_new.add(relative)
    return WorkspaceChanges(
        paths={kind: tuple(sorted(found)) for kind, found in grouped.items()},
        new_inbox_files=tuple(sorted(p for p in inbox_new if (root / p).exists())),
    )


def _interesting(root: Path) -> Callable[[Change, str], bool]:
    """A watchfiles filter that drops, cheaply and before debouncing, what ``classify`` would drop."""

    def keep(change: Change, path: str) -> bool:
        try:
            return classify(Path(path).relative_to(root).as_posix()) is not None
        except ValueError:
            return False

    return keep


async def watch_workspace(
    paths: WorkspacePaths,
    *,
    stop: asyncio.Event | None = None,
    debounce_ms: int = DEFAULT_DEBOUNCE_MS,
    step_ms: int = DEFAULT_STEP_MS,
    ready: asyncio.Event | None = None,
) -> AsyncIterator[WorkspaceChanges]:
    """Yield classified bursts of changes until ``stop`` is set (or the caller stops iterating).

    ``ready`` is set once the OS watches are registered: a change made after it is seen."""
    root = paths.root
    async for raw in awatch(
        root,
        watch_filter=_interesting(root),
        debounce=debounce_ms,
        step=step_ms,
        stop_event=stop,
        recursive=True,
        ignore_permission_denied=True,
        # The watcher is registered before its first wait returns: a short timeout that yields
        # (nothing) is the first moment we can tell, so only a caller waiting for it pays for it.
        rust_timeout=READY_PROBE_MS if ready is not None else None,
        yield_on_timeout=ready is not None,
    ):
        if ready is not None:
            ready.set()
        changes = summarise(root, raw)
        if changes:
            yield changes
