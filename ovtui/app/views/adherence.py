"""How the Memories screen shows an experience's adherence (``ovtui adherence``): its cell (the
class, in a few characters) and its panel (the counts, the pass rates with their intervals, each
directive it broke with the trajectories that broke it). Plain text and Markdown."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:
    from ovtui.train.adherence.summary import Adherence

ADHERENCE_COLUMN = "adherence"
NONE = "–"
VIOLATIONS_SHOWN = 3
_CELL = {
    "ignored": "ignored",
    "helps when followed": "helps",
    "misleads": "misleads",
    "no clear difference": "no diff",
    "too few uses to say": "too few",
}


def adherence_cell(found: Adherence | None) -> str:
    return NONE if found is None else _CELL[found.klass]


def adherence_panel(found: Adherence | None, relative: Callable[[str], str]) -> str:
    """The view's lines: the class and why, then each directive broken, most broken first."""
    if found is None:
        return "*adherence not recorded: a train run or a committed session that uses it records it*"
    lines = [f"**adherence: {found.line()}**"]
    broken = sorted((d for d in found.record.directives if d.violated), key=lambda d: -d.violated)
    for directive in broken:
        lines.append(
            f"- ignored {directive.violated} of {directive.violated + directive.followed}: *{directive.line}*"
        )
        for v in reversed(directive.violations[-VIOLATIONS_SHOWN:]):
            where = v.trajectory or ""
            shown = relative(where) if where.startswith("viking://") else where
            ended = "passed" if v.passed else "failed" if v.passed is False else "not graded"
            lines.append(f"    - case `{v.case}` ({ended}) · `{shown}`")
    unchecked = sum(1 for d in found.record.directives if d.kind == "unchecked")
    if unchecked:
        lines.append(f"*{unchecked} line(s) no trajectory can show: not checked offline*")
    return "\n".join(lines)


def adherence_text(found: Adherence | None) -> Text:
    """Review's line about the experience an item edits: was it followed, and what it broke most."""
    if found is None:
        return Text("adherence: not recorded yet", style="dim")
    line = f"adherence: {found.line()}"
    broken = found.most_ignored
    if broken is not None:
        line += f" · most ignored: {broken.line} ({broken.violated} of {broken.violated + broken.followed})"
    return Text(line, style="yellow" if found.klass in ("ignored", "misleads") else "")
