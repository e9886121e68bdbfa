"""A content change split into hunks, and the text with only some of them taken.

A hunk is one run of changed lines between lines both texts share (the line alignment's opcodes,
no context): lines removed, added, or replaced. Hunks are numbered from 1 in the order they appear,
as ``ovtui review show`` lists them and ``ovtui review approve PLAN ITEM --hunks 1,3`` names them.
Taking a set of hunks keeps the base's lines everywhere else, so what is applied is the base with
exactly the approved hunks.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ovtui.memory.line_diff import line_opcodes


@dataclass(frozen=True)
class Hunk:
    number: int
    removed: tuple[str, ...]
    added: tuple[str, ...]
    at: int  # the line of the base (from 1) where it starts

    def lines(self) -> list[str]:
        head = f"@@ hunk {self.number} (line {self.at}) @@"
        return [head, *(f"-{line}" for line in self.removed), *(f"+{line}" for line in self.added)]


# The same alignment the field diff draws (so its hunk numbers are these), kept for the few changes
# on screen: Review asks for one item's hunks several times per repaint.
@lru_cache(maxsize=32)
def _opcodes(before: str, after: str) -> Sequence[tuple[str, int, int, int, int]]:
    return tuple(line_opcodes(before.splitlines(), after.splitlines()))


def hunks(before: str | None, after: str) -> list[Hunk]:
    """The hunks that turn ``before`` (None: a new file, one hunk) into ``after``."""
    old, new = (before or "").splitlines(), after.splitlines()
    found: list[Hunk] = []
    for tag, i1, i2, j1, j2 in _opcodes(before or "", after):
        if tag != "equal":
            found.append(Hunk(len(found) + 1, tuple(old[i1:i2]), tuple(new[j1:j2]), i1 + 1))
    return found


def with_hunks(before: str | None, after: str, chosen: Collection[int]) -> str:
    """``before`` with the hunks numbered in ``chosen`` of the change to ``after``; a number that
    is no hunk of it raises ValueError naming it."""
    count = len(hunks(before, after))
    unknown = sorted(set(chosen) - set(range(1, count + 1)))
    if unknown:
        raise ValueError(f"no hunk {', '.join(map(str, unknown))}: this change has hunks 1–{count}")
    old, new = (before or "").splitlines(), after.splitlines()
    lines: list[str] = []
    number = 0
    for tag, i1, i2, j1, j2 in _opcodes(before or "", after):
        if tag == "equal":
            lines.extend(old[i1:i2])
            continue
        number += 1
        lines.extend(new[j1:j2] if number in chosen else old[i1:i2])
    return "\n".join(lines)
