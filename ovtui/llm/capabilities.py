"""What an OpenAI-compatible endpoint supports, learned from the 400s it answers and remembered in
``.ovtui/endpoints.json`` (keyed by base URL + model), so the next run does not pay the refused call
again. Only the base URL (without any user, password or query in it) and the model name are kept:
never a key.

The fallbacks, in order: ``response_format`` json_schema with ``strict`` → without ``strict`` →
json_object → plain text (the schema in the prompt, one repair round); ``tools`` → the JSON
tool-request form; any other parameter the server calls unknown → left out.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit, urlunsplit

from ovtui.core.errors import OvtuiError
from ovtui.storage.fsio import atomic_write_text
from ovtui.storage.paths import ENDPOINTS_FILE
from ovtui.storage.reading import read_json

log = logging.getLogger(__name__)

FormatMode = Literal["json_schema", "json_object", "text"]
MAX_ENDPOINTS_FILE_BYTES = 256 * 1024
MAX_DROPPED_PARAMS = 16


@dataclass
class Capabilities:
    """What one endpoint accepts; the defaults are what a full OpenAI-compatible server does."""

    format_mode: FormatMode = "json_schema"
    strict: bool = True
    tools: bool = True
    dropped_params: list[str] = field(default_factory=list)
    context_window: int | None = None  # as reported when `ovtui doctor` last asked

    @classmethod
    def from_record(cls, record: Any) -> Capabilities | None:
        """The capabilities in one record of the file; None for a record that is not one."""
        if not isinstance(record, dict):
            return None
        mode: Any = record.get("format_mode")
        strict, tools = record.get("strict"), record.get("tools")
        dropped, window = record.get("dropped_params", []), record.get("context_window")
        if (
            mode not in get_args(FormatMode)
            or not isinstance(strict, bool)
            or not isinstance(tools, bool)
            or not isinstance(dropped, list)
            or not all(isinstance(p, str) for p in dropped)
            or not (window is None or (isinstance(window, int) and not isinstance(window, bool)))
        ):
            return None
        format_mode: FormatMode = mode
        return cls(format_mode, strict, tools, dropped[:MAX_DROPPED_PARAMS], window)

    def copy(self) -> Capabilities:
        """A copy that later learning (which changes these in place) leaves as it is."""
        return replace(self, dropped_params=list(self.dropped_params))


def endpoint_key(base_url: str, model: str) -> str:
    """``<base URL> <model>``; a user, password, query or fragment in the URL is left out."""
    parts = urlsplit(base_url.strip())
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return f"{urlunsplit((parts.scheme, netloc, parts.path.rstrip('/'), '', ''))} {model}"


class CapabilityMemory:
    """``.ovtui/endpoints.json`` of one workspace: ``{"endpoints": {key: capabilities}}``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / ENDPOINTS_FILE

    def _records(self) -> dict[str, Any]:
        try:
            data = read_json(
                self.path, MAX_ENDPOINTS_FILE_BYTES, what="the endpoint record", shown=ENDPOINTS_FILE
            )
        except FileNotFoundError:
            return {}
        except (OvtuiError, ValueError) as exc:
            # Only facts that are learned again: a damaged file costs one refused call, not the run.
            log.warning(
                "%s is unreadable (%s); endpoint capabilities will be learned again", ENDPOINTS_FILE, exc
            )
            return {}
        endpoints = data.get("endpoints") if isinstance(data, dict) else None
        return endpoints if isinstance(endpoints, dict) else {}

    def recall(self, key: str) -> Capabilities | None:
        return Capabilities.from_record(self._records().get(key))

    def remember(self, key: str, capabilities: Capabilities) -> None:
        records = self._records()
        records[key] = asdict(capabilities)
        text = json.dumps({"endpoints": records}, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        atomic_write_text(self.path, text, root=self.root)
