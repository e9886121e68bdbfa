"""What a field diff shows, built from plan items and history records (no Textual here).

A ``DiffSection`` is one file: a title and one ``FieldChange`` per field that differs (content
first, then the MEMORY_FIELDS keys in file order). Non-string values are shown as pretty JSON so
a change inside ``links`` is a line change like any other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ovtui.core.domain import PolicyPlanItem
from ovtui.core.errors import MemoryFormatError
from ovtui.core.fileformat import MemoryFile, parse_memory
from ovtui.memory.memory_diff import MemoryDiff


@dataclass(frozen=True)
class HunkChoice:
    """Which hunks of a content change (``ovtui.memory.hunks``, from 1) the reviewer takes, and the
    one the hunk keys are on: the diff numbers the hunks and marks each taken or left."""

    taken: frozenset[int]
    current: int | None = None


@dataclass(frozen=True)
class FieldChange:
    name: str
    before: str | None  # None: the field (or file) is absent on that side
    after: str | None
    hunks: HunkChoice | None = None  # set: the change is shown hunk by hunk, numbered


@dataclass(frozen=True)
class DiffSection:
    title: str
    changes: list[FieldChange] = field(default_factory=list)
    deleted: bool = False
    note: str = ""


def show_value(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def _parse(text: str | None) -> MemoryFile | None:
    if text is None:
        return None
    try:
        return parse_memory(text)
    except MemoryFormatError:
        return MemoryFile(content=text)  # show an unparsable file as plain text rather than fail


def file_changes(before_text: str | None, after_text: str | None) -> list[FieldChange]:
    """Field-by-field differences of two rendered memory files (None: the file is absent)."""
    before, after = _parse(before_text), _parse(after_text)
    names = ["content"]
    for memory in (before, after):
        if memory is not None:
            names += [k for k in memory.fields if k not in names]
    changes = []
    for name in names:
        old = _field(before, name)
        new = _field(after, name)
        if old != new:
            changes.append(FieldChange(name, old, new))
    return changes


def _field(memory: MemoryFile | None, name: str) -> str | None:
    if memory is None:
        return None
    if name == "content":
        return memory.content
    return show_value(memory.fields.get(name))


def item_section(
    item: PolicyPlanItem, current: MemoryFile | None, title: str, hunks: HunkChoice | None = None
) -> DiffSection:
    """A plan item as a diff: content (numbered hunk by hunk when ``hunks`` is given), and
    status/name where the plan changes them."""
    deleted = item.kind == "delete"
    before_content = item.before_content
    after_content = None if deleted else item.after_content
    changes: list[FieldChange] = []
    if before_content is None:
        changes.append(FieldChange("name", None, item.target_name))
    if before_content != after_content:
        changes.append(FieldChange("content", before_content, after_content, hunks))
    current_status = show_value(current.fields.get("status")) if current else None
    new_status = item.metadata.get("status")
    if deleted:
        changes.append(FieldChange("name", item.target_name, None))
    elif new_status and new_status != current_status:
        changes.append(FieldChange("status", current_status, str(new_status)))
    extra = item.metadata.get("fields")
    if not deleted and isinstance(extra, dict):
        # Other fields the item sets (an entity's category, a case's rubric), as declared by its type.
        for key, value in extra.items():
            old = show_value(current.fields.get(key)) if current else None
            if key != "status" and show_value(value) != old:
                changes.append(FieldChange(key, old, show_value(value)))
    if item.base_version is not None:
        after_version = None if deleted else str(item.base_version + 1)
        changes.append(FieldChange("version", str(item.base_version), after_version))
    note = "edited by the reviewer" if item.metadata.get("edited_by_reviewer") else ""
    return DiffSection(title=title, changes=changes, deleted=deleted, note=note)


def record_sections(record: MemoryDiff, relative: Callable[[str | None], str]) -> list[DiffSection]:
    """One section per operation of a history record; ``relative`` maps a URI to a display path."""
    sections = [
        DiffSection(f"+ {relative(op.uri)}", file_changes(None, op.after)) for op in record.operations.adds
    ]
    sections += [
        DiffSection(f"~ {relative(op.uri)}", file_changes(op.before, op.after))
        for op in record.operations.updates
    ]
    sections += [
        DiffSection(f"- {relative(op.uri)}", file_changes(op.deleted_content, None), deleted=True)
        for op in record.operations.deletes
    ]
    return sections
