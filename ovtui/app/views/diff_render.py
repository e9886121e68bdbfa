"""Field diffs as rows of plain text, styled and wrapped only when a row is drawn.

Lines are aligned by ``line_diff`` (patience anchors, then difflib); inside a changed pair of lines, words are
diffed again so only the changed words are highlighted. Word diffs and wrapping are the costly
part, so ``build_rows`` keeps plain strings and ``row_lines`` styles one row at a time: the widget
draws only what is on screen, which keeps a 2,000-line experience quick to open. Long unchanged
stretches collapse to a marker with a little context around the changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from rich.cells import cell_len
from rich.console import Console
from rich.containers import Lines
from rich.text import Span, Text

from ovtui.app.views.diff_model import DiffSection, FieldChange, HunkChoice
from ovtui.core.hidden_text import reveal
from ovtui.memory.hunks import Hunk, hunks
from ovtui.memory.line_diff import line_opcodes

CONTEXT_LINES = 2
LABEL_WIDTH = 10
SEPARATOR = " │ "
REMOVED = "red"
ADDED = "green"
REMOVED_WORD = "bold white on #8b1a1a"
ADDED_WORD = "bold black on #5fd75f"
UNCHANGED = "dim"
PLACEHOLDER = "italic dim"
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
_WORD = re.compile(r"\s*\S+\s*")  # what Rich calls a word when it wraps
# Only measures (wraps) text that is not plain ASCII; draws nothing.
_WRAP_CONSOLE = Console(width=400, color_system=None, force_terminal=False, legacy_windows=False)

RowKind = Literal["title", "note", "equal", "change", "skip", "hunk"]
CURRENT_HUNK = "bold reverse"


@dataclass(frozen=True, slots=True)
class DiffRow:
    kind: RowKind
    label: str = ""  # the field name, on the first row of a field
    left: str | None = None  # None: no line on that side
    right: str | None = None
    deleted: bool = False  # the row belongs to a deleted file: drawn red
    left_placeholder: str = ""  # "(absent)" / "(deleted)" shown where a side has no value
    right_placeholder: str = ""
    hunk: int = 0  # a "hunk" row: the number of the hunk it heads
    current: bool = False  # a "hunk" row: the hunk keys are on it


# --- building rows (plain strings) --------------------------------------------------------------


def build_rows(sections: list[DiffSection]) -> list[DiffRow]:
    rows: list[DiffRow] = []
    for number, section in enumerate(sections):
        if number:
            rows.append(DiffRow("note", left=""))
        title = section.title + (f"  ({section.note})" if section.note else "")
        rows.append(DiffRow("title", left=title, deleted=section.deleted))
        if not section.changes:
            rows.append(DiffRow("note", left="no field changes"))
        for change in section.changes:
            rows.extend(field_rows(change, section.deleted))
    return rows


def field_rows(change: FieldChange, deleted: bool = False) -> list[DiffRow]:
    if change.hunks is not None and change.after is not None:
        rows = list(_hunk_rows(change.before, change.after, change.hunks, deleted))
    else:
        rows = list(_line_rows(change.before, change.after, change.name, deleted))
    left_placeholder = "(absent)" if change.before is None else ""
    right_placeholder = ("(deleted)" if deleted else "(absent)") if change.after is None else ""
    if not rows:
        rows = [DiffRow("change", change.name, deleted=deleted)]
    first = rows[0]
    rows[0] = DiffRow(
        first.kind,
        change.name,
        first.left,
        first.right,
        deleted,
        left_placeholder,
        right_placeholder,
        first.hunk,
        first.current,
    )
    return rows


def hunk_heading(hunk: Hunk, choice: HunkChoice) -> str:
    """``▶ @@ hunk 2 (line 5) · ✗ left out @@``: what the hunk keys act on, readable without colour."""
    mark = "▶ " if hunk.number == choice.current else ""
    taken = "✓ taken" if hunk.number in choice.taken else "✗ left out"
    return f"{mark}@@ hunk {hunk.number} (line {hunk.at}) · {taken} @@"


def _hunk_rows(before: str | None, after: str, choice: HunkChoice, deleted: bool) -> Iterator[DiffRow]:
    """The change hunk by hunk, as ``ovtui.memory.hunks`` numbers it (the numbers ``review approve
    --hunks`` takes), each under a heading saying whether it is taken."""
    old = [reveal(line) for line in (before or "").splitlines()]
    at = 0  # the base line the next equal stretch starts at
    for hunk in hunks(before, after):
        start = hunk.at - 1
        if start > at:
            yield from _equal_rows(old[at:start], at == 0, False, deleted)
        current = hunk.number == choice.current
        yield DiffRow("hunk", left=hunk_heading(hunk, choice), hunk=hunk.number, current=current)
        yield from _change_rows([reveal(x) for x in hunk.removed], [reveal(x) for x in hunk.added], deleted)
        at = start + len(hunk.removed)
    if at < len(old):
        yield from _equal_rows(old[at:], at == 0, True, deleted)


def _line_rows(before: str | None, after: str | None, label: str, deleted: bool) -> Iterator[DiffRow]:
    # Hidden characters are written out (⟦U+200B⟧), so the reviewer sees what the agent is given.
    old = reveal(before).splitlines() if before is not None else []
    new = reveal(after).splitlines() if after is not None else []
    if before is not None and not old:
        old = [""]
    if after is not None and not new:
        new = [""]
    for op, i1, i2, j1, j2 in line_opcodes(old, new):
        if op == "equal":
            yield from _equal_rows(old[i1:i2], i1 == 0 and j1 == 0, i2 == len(old), deleted)
            continue
        yield from _change_rows(old[i1:i2], new[j1:j2], deleted)


def _change_rows(left: list[str], right: list[str], deleted: bool) -> Iterator[DiffRow]:
    """Removed lines beside the added ones, pair by pair (a side with fewer lines has none)."""
    for index in range(max(len(left), len(right))):
        yield DiffRow(
            "change",
            left=left[index] if index < len(left) else None,
            right=right[index] if index < len(right) else None,
            deleted=deleted,
        )


def _equal_rows(lines: list[str], at_start: bool, at_end: bool, deleted: bool) -> Iterator[DiffRow]:
    head = 0 if at_start else CONTEXT_LINES
    tail = 0 if at_end else CONTEXT_LINES
    if len(lines) <= head + tail + 1:
        for line in lines:
            yield DiffRow("equal", left=line, right=line, deleted=deleted)
        return
    for line in lines[:head]:
        yield DiffRow("equal", left=line, right=line, deleted=deleted)
    hidden = len(lines) - head - tail
    marker = f"⋯ {hidden} unchanged line{'s' if hidden != 1 else ''}"
    yield DiffRow("skip", left=marker, right=marker, deleted=deleted)
    for line in lines[len(lines) - tail :]:
        yield DiffRow("equal", left=line, right=line, deleted=deleted)


# --- styling and wrapping one row ---------------------------------------------------------------


def word_diff(before: str, after: str) -> tuple[Text, Text]:
    """Both lines, with the words that differ highlighted (spans, not appends: this runs per draw)."""
    old, new = _TOKEN.findall(before), _TOKEN.findall(after)
    left_spans: list[Span] = []
    right_spans: list[Span] = []
    left_at = right_at = 0
    for op, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        left_len = sum(len(t) for t in old[i1:i2])
        right_len = sum(len(t) for t in new[j1:j2])
        if op != "equal":
            if left_len:
                left_spans.append(Span(left_at, left_at + left_len, REMOVED_WORD))
            if right_len:
                right_spans.append(Span(right_at, right_at + right_len, ADDED_WORD))
        left_at += left_len
        right_at += right_len
    return Text(before, style=REMOVED, spans=left_spans), Text(after, style=ADDED, spans=right_spans)


def styled_sides(row: DiffRow) -> tuple[Text | None, Text | None]:
    if row.kind == "title":
        return Text(row.left or "", style="bold red" if row.deleted else "bold"), None
    if row.kind == "note":
        return Text(row.left or "", style=PLACEHOLDER), None
    if row.kind == "hunk":
        return Text(row.left or "", style=CURRENT_HUNK if row.current else "bold"), None
    if row.kind == "skip":
        return Text(row.left or "", style=PLACEHOLDER), Text(row.right or "", style=PLACEHOLDER)
    if row.kind == "equal":
        return Text(row.left or "", style=UNCHANGED), Text(row.right or "", style=UNCHANGED)
    if row.left is not None and row.right is not None:
        return word_diff(row.left, row.right)
    left = Text(row.left, style=REMOVED) if row.left is not None else None
    right = Text(row.right, style=ADDED) if row.right is not None else None
    return left, right


def split_widths(width: int) -> tuple[int, int]:
    """Widths of the before and after columns for a total width."""
    free = max(2, width - LABEL_WIDTH - cell_len(SEPARATOR))
    return free // 2, free - free // 2


def row_height(row: DiffRow, width: int, unified: bool) -> int:
    """Lines a row needs, without styling it: exact for lines that fit, a wrap otherwise."""
    if unified:
        return sum(_wrapped_count(text, width) for text in _unified_plain(row))
    if row.kind in ("title", "note", "hunk"):
        return _wrapped_count(row.left or "", width - LABEL_WIDTH)
    left_w, right_w = split_widths(width)
    left = row.left if row.left is not None else row.left_placeholder
    right = row.right if row.right is not None else row.right_placeholder
    return max(_wrapped_count(left, left_w), _wrapped_count(right, right_w), 1)


def _wrapped_count(text: str, width: int) -> int:
    """Lines ``text`` wraps to, exactly as Rich wraps it (heights must match what is drawn)."""
    width = max(1, width)
    if text.isascii() and text.isprintable():  # one cell per character: count without Rich objects
        return 1 if len(text) <= width else _ascii_wrapped_count(text, width)
    if cell_len(text) <= width:
        return 1
    return len(Text(text).wrap(_WRAP_CONSOLE, width, overflow="fold"))  # wide or control characters


def _ascii_wrapped_count(text: str, width: int) -> int:
    """How ``Text.wrap`` breaks printable ASCII, counting the breaks instead of building the lines.

    ``test_field_diff`` checks it against ``Text.wrap`` itself on many texts and widths.
    """
    breaks = 0
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = len(word.rstrip())
        if width - offset >= length:
            offset += len(word)
        elif length > width:  # folded across lines in chunks of ``width``
            chunks = [word[i : i + width] for i in range(0, len(word), width)]
            for index, chunk in enumerate(chunks):
                if start:
                    breaks += 1
                if index == len(chunks) - 1:
                    offset = len(chunk)
                else:
                    start += len(chunk)
        elif offset and start:
            breaks += 1
            offset = len(word)
    return breaks + 1


def _unified_plain(row: DiffRow) -> list[str]:
    """The unwrapped lines of a row in the unified view (``_unified_lines`` styles the same strings)."""
    texts = [f"{row.label}:"] if row.label else []
    if row.kind == "title":
        texts.append(row.left or "")
    elif row.kind != "change":
        texts.append("  " + (row.left or ""))
    else:
        texts += ["- " + row.left] if row.left is not None else []
        texts += ["+ " + row.right] if row.right is not None else []
        if row.left is None and row.right is None:
            texts.append("")
    return texts


def row_lines(row: DiffRow, width: int, unified: bool, console: Console) -> list[Text]:
    """The visual lines of one row at ``width`` cells."""
    left, right = styled_sides(row)
    if unified:
        return _unified_lines(row, left, right, width, console)
    label = Text(row.label.ljust(LABEL_WIDTH)[:LABEL_WIDTH], style="bold red" if row.deleted else "bold")
    if row.kind in ("title", "note", "hunk"):
        lines = (left or Text("")).wrap(console, max(1, width - LABEL_WIDTH), overflow="fold")
        head = {"title": Text("file".ljust(LABEL_WIDTH), style="bold"), "hunk": label}.get(
            row.kind, Text(" " * LABEL_WIDTH)
        )
        return [(head if i == 0 else Text(" " * LABEL_WIDTH)) + line for i, line in enumerate(lines)]
    left_w, right_w = split_widths(width)
    left = (
        left
        if left is not None
        else Text(row.left_placeholder, style=_placeholder_style(row.left_placeholder))
    )
    right = (
        right
        if right is not None
        else Text(row.right_placeholder, style=_placeholder_style(row.right_placeholder))
    )
    left_lines = left.wrap(console, left_w, overflow="fold")
    right_lines = right.wrap(console, right_w, overflow="fold")
    out = []
    for index in range(max(len(left_lines), len(right_lines), 1)):
        line = label.copy() if index == 0 else Text(" " * LABEL_WIDTH)
        line.append_text(_cell(left_lines, index, left_w))
        line.append(SEPARATOR, style="dim")
        line.append_text(_cell(right_lines, index, right_w))
        out.append(line)
    return out


def _placeholder_style(placeholder: str) -> str:
    return "bold red" if placeholder == "(deleted)" else PLACEHOLDER


def _cell(lines: Lines, index: int, width: int) -> Text:
    text = lines[index].copy() if index < len(lines) else Text("")
    text.rstrip()
    text.pad_right(max(0, width - text.cell_len))
    return text


def _unified_lines(
    row: DiffRow, left: Text | None, right: Text | None, width: int, console: Console
) -> list[Text]:
    texts: list[Text] = []
    if row.label:
        texts.append(Text(f"{row.label}:", style="bold red" if row.deleted else "bold"))
    if row.kind == "title":
        texts.append(Text.assemble(left or ""))
    elif row.kind != "change":
        texts.append(Text("  ") + (left or Text("")))
    else:
        if left is not None:
            texts.append(Text("- ", style=REMOVED) + left)
        if right is not None:
            texts.append(Text("+ ", style=ADDED) + right)
        if left is None and right is None:
            texts.append(Text(""))
    lines: list[Text] = []
    for text in texts:
        lines.extend(text.wrap(console, max(1, width), overflow="fold"))
    return lines


def render_plain(sections: list[DiffSection], width: int, unified: bool = False) -> str:
    """The whole diff as plain text (tests and the CLI-free checks use it)."""
    console = Console(width=width, color_system=None, force_terminal=False)
    return "\n".join(
        line.plain.rstrip()
        for row in build_rows(sections)
        for line in row_lines(row, width, unified, console)
    )
