"""The three sections of an experience (Situation / Approach / Reflect) as line lists.

The offline learner only ever adds lines, so merging two versions is a union. Lines keep their own
bullet style ("- ", "1. ") so a hand-written file is not reformatted; duplicates are recognised by a
normalised key. Caps keep repeated evidence from bloating a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

SECTIONS = ("Situation", "Approach", "Reflect")
EXAMPLE_PREFIX = "Example request:"
MAX_EXAMPLES = 3
MAX_APPROACH_LINES = 8

# Written into an empty section so every experience has all three; dropped again on parse.
PLACEHOLDERS = {
    "Situation": "- Not described yet.",
    "Approach": "- No successful approach recorded yet; follow the Reflect rules.",
    "Reflect": "- No rules learned yet.",
}

_HEADER = re.compile(r"^#{1,6}\s+(?P<title>.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+")


def strip_bullet(line: str) -> str:
    return _BULLET.sub("", line.strip())


@lru_cache(maxsize=8192)  # the same lines are compared again and again as a file is merged into
def line_key(line: str) -> str:
    """What makes two lines the same: case, spacing, bullets and closing punctuation do not count."""
    text = strip_bullet(line).lower().replace("->", "→")
    return re.sub(r"\s+", " ", text).strip(" .;:")


@dataclass
class ExperienceSections:
    situation: list[str] = field(default_factory=list)
    approach: list[str] = field(default_factory=list)
    reflect: list[str] = field(default_factory=list)
    # Sections other than the three (kept verbatim, after them) so nothing a person wrote is lost.
    other: list[tuple[str, list[str]]] = field(default_factory=list)

    def lines(self, section: str) -> list[str]:
        return {"Situation": self.situation, "Approach": self.approach, "Reflect": self.reflect}[section]

    def keys(self, section: str) -> set[str]:
        return {line_key(line) for line in self.lines(section)}

    def add(self, section: str, text: str, *, capped: bool = True) -> bool:
        """Add one line (bullet added if missing) unless it is a duplicate or the section is full."""
        lines = self.lines(section)
        key = line_key(text)
        if not key or key in self.keys(section):
            return False
        if capped and section == "Approach" and len(lines) >= MAX_APPROACH_LINES:
            return False
        if self._is_example(text) and sum(self._is_example(x) for x in lines) >= MAX_EXAMPLES:
            return False
        lines.append(text if _BULLET.match(text.strip()) else f"- {text.strip()}")
        return True

    @staticmethod
    def _is_example(line: str) -> bool:
        return strip_bullet(line).startswith(EXAMPLE_PREFIX)

    def absorb(self, other: ExperienceSections) -> int:
        """Union ``other`` into this one; returns how many lines were new."""
        added = 0
        for section in SECTIONS:
            for line in other.lines(section):
                added += self.add(section, line)
        known = {title.lower() for title, _ in self.other}
        for title, lines in other.other:
            if title.lower() not in known:
                self.other.append((title, list(lines)))
        return added

    def copy(self) -> ExperienceSections:
        return ExperienceSections(
            list(self.situation),
            list(self.approach),
            list(self.reflect),
            [(t, list(ls)) for t, ls in self.other],
        )

    def same_as(self, other: ExperienceSections) -> bool:
        return all(
            [line_key(x) for x in self.lines(s)] == [line_key(x) for x in other.lines(s)] for s in SECTIONS
        )

    def render(self) -> str:
        blocks = []
        for section in SECTIONS:
            body = self.lines(section) or [PLACEHOLDERS[section]]
            blocks.append("\n".join([f"## {section}", *body]))
        blocks.extend("\n".join([f"## {title}", *lines]) for title, lines in self.other)
        return "\n".join(blocks)


def is_placeholder(line: str) -> bool:
    return line_key(line) in {line_key(p) for p in PLACEHOLDERS.values()}


def parse_sections(content: str) -> ExperienceSections:
    """Split an experience body into its sections. Lines before any heading count as Situation."""
    result = ExperienceSections()
    placeholder_keys = {line_key(p) for p in PLACEHOLDERS.values()}
    current: list[str] = result.situation
    for raw in content.splitlines():
        line = raw.rstrip()
        header = _HEADER.match(line.strip())
        if header:
            title = header.group("title").strip()
            known = next((s for s in SECTIONS if s.lower() == title.lower()), None)
            if known:
                current = result.lines(known)
            else:
                result.other.append((title, []))
                current = result.other[-1][1]
            continue
        if line.strip() and line_key(line) not in placeholder_keys:
            current.append(line.strip())
    return result
