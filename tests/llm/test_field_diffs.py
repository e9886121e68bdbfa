"""field_unified_diff: only changed fields, strings by line, dicts/lists as formatted JSON."""

from __future__ import annotations

from ovtui.core.fileformat import MemoryFile
from ovtui.memory.diffs import field_unified_diff

BEFORE = MemoryFile(
    uri="viking://user/default/memories/experiences/x.md",
    content="## Situation\n- a\n## Approach\n- b\n## Reflect\n- c",
    fields={"experience_name": "x", "version": 2, "status": "draft", "tags": ["refund", "order"]},
)


def test_only_changed_fields_appear_content_first() -> None:
    after = BEFORE.model_copy(
        update={
            "content": BEFORE.content.replace("- b", "- b\n- IF paid THEN refund"),
            "fields": {**BEFORE.fields, "version": 3, "tags": ["refund", "payment"]},
        }
    )
    diff = field_unified_diff(BEFORE, after)
    assert diff.split("\n\n")[0].splitlines() == [
        "Field Diff: content",
        "--- before/content",
        "+++ after/content",
        "@@ -2,5 +2,6 @@",
        " - a",
        " ## Approach",
        " - b",
        "+- IF paid THEN refund",
        " ## Reflect",
        " - c",
    ]
    assert '-  "order"\n+  "payment"' in diff
    assert "Field Diff: tags" in diff
    assert "status" not in diff and "version" not in diff and "experience_name" not in diff


def test_new_file_shows_every_field_as_added_and_content_once() -> None:
    diff = field_unified_diff(None, BEFORE)
    sections = [s.splitlines()[0] for s in diff.split("\n\n")]
    assert sections == [
        "Field Diff: content",
        "Field Diff: experience_name",
        "Field Diff: status",
        "Field Diff: tags",
    ]
    assert "--- /dev/null" in diff and diff.count("## Situation") == 1


def test_removed_field_and_no_change() -> None:
    after = BEFORE.model_copy(update={"fields": {k: v for k, v in BEFORE.fields.items() if k != "tags"}})
    assert field_unified_diff(BEFORE, after).startswith("Field Diff: tags\n--- before/tags\n+++ /dev/null")
    assert field_unified_diff(BEFORE, BEFORE) == ""
    assert field_unified_diff(BEFORE, after, ignore=("version", "tags")) == ""
