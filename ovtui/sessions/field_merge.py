"""How a batch of extracted memories aimed at one file becomes that file's next text and fields.

The memories are applied in order on the file as it is now, each on the result of the one before,
so two sessions' operations on one profile both land:

- an offline memory (``merge="lines"``) appends the lines of its content the text lacks; its other
  fields merge by their declared merge op;
- a model's operation (``merge="ops"``) merges every field by its declared merge op
  (``patch``/``replace``/``sum``/``immutable``, ``ovtui.memory.merge_ops``): SEARCH/REPLACE blocks
  are applied to the current text, and must still match it. A complete new text for a patch field
  replaces the text when the file is still what the model saw; when the file moved on since (another
  session's operation in the same batch, or a write since the model read it) the model's change is
  carried over line by line — the lines it added are appended, the lines it removed are removed —
  so the other change is not lost.

An operation that cannot be applied any more (a SEARCH block that no longer matches) is left out
and reported as an error naming the memory; the rest of the batch is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ovtui.core.errors import PatchError
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.memory_diff import EDIT_NOT_APPLICABLE
from ovtui.memory.merge_ops import has_patch_blocks, merge_value
from ovtui.memory.types import MemoryTypeSchema
from ovtui.plugins.session_extraction import ExtractedMemory

CONTENT = "content"


@dataclass(frozen=True)
class LeftOut:
    """A memory whose operation could not be applied any more, and why (reported to its commit,
    and in its memory_diff as a skipped operation with ``code``)."""

    memory: ExtractedMemory
    reason: str
    code: str = EDIT_NOT_APPLICABLE

    def __str__(self) -> str:
        name = self.memory.name or self.memory.memory_type
        whose = f" of peer {self.memory.peer_id}" if self.memory.peer_id else ""
        return f"{self.memory.memory_type} {name!r}{whose}: {self.reason}; this operation was left out"


@dataclass
class MergedFile:
    """The file's next content and the fields the batch set; ``left_out``: the memories not applied."""

    content: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    left_out: list[LeftOut] = field(default_factory=list)


def lines_of(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _carry_over(seen: str, given: str, current: str) -> str:
    """The model's change from ``seen`` to ``given``, made on ``current`` line by line."""
    before, after = lines_of(seen), lines_of(given)
    removed = set(before) - set(after)
    kept = [line for line in lines_of(current) if line not in removed]
    added = [line for line in after if line not in before and line not in kept]
    return "\n".join(dict.fromkeys([*kept, *added]))


def _merge_field(schema: MemoryTypeSchema, key: str, memory: ExtractedMemory, state: dict[str, Any]) -> Any:
    value = memory.fields[key]
    decl = schema.field(key)
    op = decl.merge_op if decl else "replace"
    current = state.get(key)
    if memory.merge == "lines" and key == CONTENT:
        if current is None:
            return value
        have = lines_of(str(current))
        new = [line for line in lines_of(str(value)) if line not in have]
        return "\n".join(dict.fromkeys([*have, *new])) if new else current
    if op == "patch" and isinstance(value, str) and not has_patch_blocks(value) and current is not None:
        seen = (memory.seen or {}).get(key)
        if seen is None or str(seen) != str(current):
            # Written for a file the model did not see in this state: keep what is there now.
            return _carry_over("" if seen is None else str(seen), value, str(current))
    return merge_value(op, current, value)


def merge_group(
    schema: MemoryTypeSchema, current: MemoryFile | None, group: list[ExtractedMemory]
) -> MergedFile:
    """Apply ``group`` in order on ``current``; the fields set are those the memories gave."""
    state: dict[str, Any] = {CONTENT: current.content, **current.fields} if current is not None else {}
    touched: list[str] = []
    left_out: list[LeftOut] = []
    for memory in group:
        try:
            updates = {key: _merge_field(schema, key, memory, state) for key in memory.fields}
        except PatchError as exc:
            left_out.append(LeftOut(memory, str(exc)))
            continue
        state.update(updates)
        touched += [key for key in updates if key not in touched]
    content = state.get(CONTENT)
    fields = {key: state[key] for key in touched if key != CONTENT}
    return MergedFile(None if content is None else str(content), fields, left_out)
