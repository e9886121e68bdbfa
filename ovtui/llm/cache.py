"""On-disk cache of model answers, keyed by the full request.

The key is the sha256 of everything that determines the answer (endpoint, model, messages,
schema, tools, temperature), so a replayed run makes no HTTP request at all. Entries hold the
answer and its usage, never the request headers: the API key cannot end up here.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from ovtui.core.bounds import MAX_CACHE_ENTRY_BYTES
from ovtui.core.errors import OvtuiError
from ovtui.storage.fsio import atomic_write_text
from ovtui.storage.reading import read_json

log = logging.getLogger(__name__)

CACHE_FORMAT = 1


def request_key(request: dict[str, Any]) -> str:
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """``<workspace>/.ovtui/llm_cache/<key[:2]>/<key>.json``, each written atomically."""

    def __init__(self, folder: Path, root: Path | None = None) -> None:
        self.folder = folder
        # Writes must stay inside the workspace: by default the one whose .ovtui/ holds the cache.
        self.root = root if root is not None else folder.parent.parent

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            entry = read_json(path, MAX_CACHE_ENTRY_BYTES, what="the cache entry", shown=path.name)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, OvtuiError) as exc:
            # A damaged entry is a miss, not a failure: the call is simply made again.
            log.warning("ignoring unreadable LLM cache entry %s: %s", path.name, exc)
            return None
        if not isinstance(entry, dict) or entry.get("format") != CACHE_FORMAT or entry.get("key") != key:
            return None
        response = entry.get("response")
        return response if isinstance(response, dict) else None

    def put(self, key: str, stage: str, model: str, response: dict[str, Any]) -> None:
        entry = {"format": CACHE_FORMAT, "key": key, "stage": stage, "model": model, "response": response}
        # No directory fsync: losing a cache entry in a crash only costs a repeated call.
        atomic_write_text(
            self._path(key), json.dumps(entry, ensure_ascii=False, indent=1), root=self.root, sync_dir=False
        )
