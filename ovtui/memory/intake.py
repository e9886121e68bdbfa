"""Once-only intake: which inbox files were taken, by content hash.

The trajectories of an inbox rollout and the record that its file was taken
(``.ovtui/intake/<sha256>.json``) are committed in one journaled transaction. A watcher killed
after that commit but before it moved the file to ``inbox/done/`` finds the record when it starts
again, and moves the file without training on it a second time.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from ovtui.core.fileformat import MemoryFile
from ovtui.memory.store import MemoryStore
from ovtui.storage import fsio
from ovtui.storage.journal import FileOp, Journal
from ovtui.storage.paths import STATE_DIR, WorkspacePaths

# Rollout.metadata keys the inbox sets on a rollout it read from a file.
INTAKE_KEY = "intake_sha256"
INTAKE_FILE = "intake_file"
INTAKE_DIR = f"{STATE_DIR}/intake"


def content_key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def record_relpath(key: str) -> str:
    if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
        raise ValueError(f"not an intake key: {key!r}")
    return f"{INTAKE_DIR}/{key}.json"


def was_taken(paths: WorkspacePaths, key: str) -> bool:
    return (paths.root / record_relpath(key)).is_file()


def commit_intake(store: MemoryStore, files: list[tuple[Path, MemoryFile]], *, key: str, source: str) -> None:
    """Create the add-only ``files`` and the intake record of ``key`` all-or-nothing (under the
    workspace lock, which the journal requires)."""
    created = [store.new_file_text(path, memory) for path, memory in files]
    ops = [FileOp(store.paths.relative(path), "write", text) for path, text in created]
    record = {
        "sha256": key,
        "file": source,
        "taken_at": datetime.now(UTC).isoformat(),
        "trajectories": [store.paths.uri_for(path) for path, _ in files],
    }
    ops.append(FileOp(record_relpath(key), "write", json.dumps(record, ensure_ascii=False, indent=1)))
    with store.lock.hold("inbox intake"):
        Journal(store.paths).commit(ops)
    fsio.crash_point("intake_recorded")
