"""The field diff: rows, word highlights, collapsing, both layouts, and how items and records map to it."""

from __future__ import annotations

from rich.console import Console

from ovtui.app.views.diff_model import DiffSection, FieldChange, file_changes, item_section
from ovtui.app.views.diff_render import (
    ADDED_WORD,
    REMOVED_WORD,
    build_rows,
    render_plain,
    row_height,
    row_lines,
    word_diff,
)
from ovtui.core.domain import PolicyPlanItem
from ovtui.core.fileformat import render_memory

BEFORE = (
    "## Situation\n- Customer asks to cancel a booking\n## Approach\n- Look it up\n## Reflect\n- NEVER cancel"
)
AFTER = BEFORE.replace("a booking", "a reservation")


def test_only_changed_words_are_highlighted() -> None:
    left, right = word_diff("cancel a booking now", "cancel a reservation now")
    assert [left.plain[s.start : s.end] for s in left.spans if s.style == REMOVED_WORD] == ["booking"]
    assert [right.plain[s.start : s.end] for s in right.spans if s.style == ADDED_WORD] == ["reservation"]


def test_side_by_side_aligns_and_collapses_unchanged_lines() -> None:
    long_before = "\n".join(f"line {i}" for i in range(40))
    long_after = long_before.replace("line 20", "line twenty")
    text = render_plain([DiffSection("x.md", [FieldChange("content", long_before, long_after)])], 100)
    assert "line 20" in text and "line twenty" in text
    assert "⋯ 18 unchanged lines" in text  # 0..17 hidden before the change, with two lines of context
    assert text.count("│") < 12


def test_unified_view_marks_removed_and_added_lines() -> None:
    text = render_plain([DiffSection("x.md", [FieldChange("content", BEFORE, AFTER)])], 80, unified=True)
    assert "- - Customer asks to cancel a booking" in text
    assert "+ - Customer asks to cancel a reservation" in text


def test_long_lines_wrap_and_heights_match_the_drawn_lines() -> None:
    sections = [
        DiffSection(
            "x.md", [FieldChange("content", "short", "word " * 60), FieldChange("status", None, "draft")]
        )
    ]
    console = Console(width=200)
    for width in (60, 120):
        for unified in (False, True):
            for row in build_rows(sections):
                assert row_height(row, width, unified) == len(row_lines(row, width, unified, console))


def test_file_changes_lists_only_the_fields_that_differ() -> None:
    before = render_memory(BEFORE, {"experience_name": "x", "status": "draft", "version": 1})
    after = render_memory(AFTER, {"experience_name": "x", "status": "production", "version": 2})
    assert [c.name for c in file_changes(before, after)] == ["content", "status", "version"]
    assert [c.name for c in file_changes(None, after)] == ["content", "experience_name", "status", "version"]


def test_a_delete_item_is_red_and_says_deleted() -> None:
    item = PolicyPlanItem(kind="delete", target_name="x", before_content=BEFORE, base_version=3)
    section = item_section(item, None, "x.md")
    assert section.deleted
    text = render_plain([section], 100)
    assert "(deleted)" in text


def test_a_2000_line_diff_shows_each_changed_line_once() -> None:
    # How fast this builds is bench/tui.py's "diff" figure; here: every change is there, once.
    before = "\n".join(f"- step {i} of the long procedure" for i in range(2000))
    after = "\n".join(
        f"- step {i} of the {'revised ' if i % 10 == 0 else ''}long procedure" for i in range(2000)
    )
    rows = build_rows([DiffSection("big.md", [FieldChange("content", before, after)])])
    changed = [r.right for r in rows if r.kind == "change"]
    assert changed == [f"- step {i} of the revised long procedure" for i in range(0, 2000, 10)]
    assert all(row_height(r, 120, False) >= 1 for r in rows)


def test_row_heights_count_lines_exactly_as_rich_wraps_them() -> None:
    from rich.text import Text

    from ovtui.app.views.diff_render import _WRAP_CONSOLE, _wrapped_count

    texts = [
        "word " * 30,
        "a" * 95 + " b",
        "  leading spaces then words  and  double  spaces ",
        "x" * 250,
        "mixed " + "y" * 70 + " tail",
        "größe ändern 予約を変更する " * 6,  # not ASCII: measured by Text.wrap itself
        "tab\tseparated\tvalues " * 5,
    ]
    for text in texts:
        for width in (1, 7, 20, 33, 80):
            expected = len(Text(text).wrap(_WRAP_CONSOLE, width, overflow="fold"))
            assert _wrapped_count(text, width) == expected, (text, width)
