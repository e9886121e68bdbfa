"""The count of scorings of each sealed split (``.ovtui/sealed.json``): a guard against tuning to
the test. One increment per run that scores the split, under the workspace lock, so two runs at
once both count."""

from __future__ import annotations

import json

from ovtui.core.errors import OvtuiError
from ovtui.storage.fsio import atomic_write_text
from ovtui.storage.locks import WorkspaceLock
from ovtui.storage.paths import SEALED_SCORES_FILE, WorkspacePaths
from ovtui.storage.reading import read_bounded

MAX_SEALED_FILE_BYTES = 64 * 1024


def sealed_scores(paths: WorkspacePaths) -> dict[str, int]:
    """How many times each sealed split was scored, by ``<dataset>/<split>`` (none yet: empty)."""
    path = paths.root / SEALED_SCORES_FILE
    try:
        data = json.loads(read_bounded(path, MAX_SEALED_FILE_BYTES, what="the sealed split counts"))
    except FileNotFoundError:
        return {}
    except ValueError:
        raise OvtuiError(f"{SEALED_SCORES_FILE}: not a JSON object of counts") from None
    if not isinstance(data, dict) or not all(isinstance(v, int) for v in data.values()):
        raise OvtuiError(f"{SEALED_SCORES_FILE}: not a JSON object of counts")
    return {str(k): int(v) for k, v in data.items()}


def count_scoring(paths: WorkspacePaths, lock: WorkspaceLock, key: str) -> int:
    """Count one more scoring of sealed split ``key``; the count with this one."""
    with lock.hold("count a scoring of a sealed split"):
        counts = sealed_scores(paths)
        counts[key] = counts.get(key, 0) + 1
        text = json.dumps(counts, indent=2, sort_keys=True) + "\n"
        atomic_write_text(paths.root / SEALED_SCORES_FILE, text, root=paths.root)
    return counts[key]
