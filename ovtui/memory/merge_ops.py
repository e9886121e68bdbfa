"""Field merge ops: how a proposed value combines with the value already in a file.

- ``patch``: SEARCH/REPLACE blocks applied to the current text; each SEARCH must match exactly
  once, else PatchError says which block and why. A value without blocks replaces the text.
- ``replace``: the new value wins.
- ``sum``: numbers add up (counters such as occurrences).
- ``immutable``: the first value written stays; an empty one (a declared init value such as
  identity.md's ``name: ""``) is no value yet, so the first real one takes its place.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ovtui.core.errors import PatchError
from ovtui.memory.types import MemoryTypeSchema

SEARCH_MARK = "<<<<<<< SEARCH"
DIVIDER = "======="
REPLACE_MARK = ">>>>>>> REPLACE"

_BLOCK = re.compile(
    r"<<<<<<< SEARCH[ \t]*\n(?P<search>.*?)\n?=======[ \t]*\n(?P<replace>.*?)\n?>>>>>>> REPLACE",
    re.DOTALL,
)


@dataclass(frozen=True)
class SearchReplace:
    search: str
    replace: str


def has_patch_blocks(value: str) -> bool:
    return SEARCH_MARK in value and REPLACE_MARK in value


def parse_blocks(value: str) -> list[SearchReplace]:
    blocks = [SearchReplace(m.group("search"), m.group("replace")) for m in _BLOCK.finditer(value)]
    if not blocks or value.count(SEARCH_MARK) != len(blocks):
        raise PatchError(
            "malformed SEARCH/REPLACE block: expected '<<<<<<< SEARCH', '=======', '>>>>>>> REPLACE'"
        )
    return blocks


def render_blocks(blocks: list[SearchReplace]) -> str:
    return "\n".join(f"{SEARCH_MARK}\n{b.search}\n{DIVIDER}\n{b.replace}\n{REPLACE_MARK}" for b in blocks)


def apply_patch(current: str, value: str) -> str:
    """Apply SEARCH/REPLACE blocks in order; every search must match exactly once."""
    if not has_patch_blocks(value):
        return value
    text = current
    for index, block in enumerate(parse_blocks(value), start=1):
        if not block.search:
            raise PatchError(f"block {index}: SEARCH is empty")
        count = text.count(block.search)
        if count != 1:
            found = "not found" if count == 0 else f"found {count} times"
            raise PatchError(
                f"block {index}: SEARCH text {found} (it must match exactly once): {block.search[:80]!r}"
            )
        text = text.replace(block.search, block.replace, 1)
    return text


def merge_value(op: str, current: Any, new: Any) -> Any:
    if new is None:
        return current
    if op == "patch":
        if current is None:
            if isinstance(new, str) and has_patch_blocks(new):
                raise PatchError("SEARCH/REPLACE blocks given for a field that has no current text")
            return new
        return apply_patch(str(current), str(new))
    if op == "sum":
        if current is None:
            return new
        if isinstance(new, bool) or not isinstance(new, int | float) or not isinstance(current, int | float):
            raise PatchError(f"sum needs numbers, got {current!r} and {new!r}")
        return current + new
    if op == "immutable":
        return new if current is None or current == "" else current
    return new


def merge_fields(
    schema: MemoryTypeSchema, current: dict[str, Any], proposed: dict[str, Any]
) -> dict[str, Any]:
    """Merge a proposed operation (content included) into the current fields (content included)."""
    merged = dict(current)
    for key, value in proposed.items():
        decl = schema.field(key)
        merged[key] = merge_value(decl.merge_op if decl else "replace", current.get(key), value)
    return merged
