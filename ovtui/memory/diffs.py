"""Field-level unified diffs of memory files, as a merge prompt shows a proposal.

Only changed fields appear. Strings are diffed line by line; dicts and lists are JSON-formatted
(sorted keys, indented) and then diffed, so a changed list item shows as one line. ``content`` is
its own field and is never repeated inside another field's JSON.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection
from typing import Any

from ovtui.core.fileformat import MemoryFile

# A write counter is not a change a reviewer or a model needs to see.
DEFAULT_IGNORED = ("version",)


def _lines(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.splitlines()
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _fields(memory: MemoryFile | None) -> dict[str, Any]:
    if memory is None:
        return {}
    out = {k: v for k, v in memory.fields.items() if k != "content"}
    out["content"] = memory.content
    return out


def field_unified_diff(
    before: MemoryFile | None,
    after: MemoryFile,
    *,
    ignore: Collection[str] = DEFAULT_IGNORED,
    context: int = 3,
) -> str:
    """``Field Diff: <name>`` sections with a unified diff each; empty when nothing changed."""
    old, new = _fields(before), _fields(after)
    # content first: it is what a reader looks for; the rest in a stable order
    keys = sorted(set(old) | set(new), key=lambda k: (k != "content", k))
    sections: list[str] = []
    for key in keys:
        if key in ignore or old.get(key) == new.get(key):
            continue
        diff = difflib.unified_diff(
            _lines(old.get(key)),
            _lines(new.get(key)),
            fromfile=f"before/{key}" if key in old else "/dev/null",
            tofile=f"after/{key}" if key in new else "/dev/null",
            n=context,
            lineterm="",
        )
        body = "\n".join(diff)
        if body:
            sections.append(f"Field Diff: {key}\n{body}")
    return "\n\n".join(sections)
