"""An experience's directives as ovtui reads them without the environment's help.

First the learners' own wording (``wording.lessons``: exact), then plain lines that name tools —
``ALWAYS x``, ``NEVER x``, ``ALWAYS x before y`` / ``after y``, ``ask … confirm before x``, ``a → b →
c`` — each optionally ``IF <situation> THEN …`` or ``… when <situation>``, the situation in the
learners' fact wording ("the reservation is not refundable") or as ``key=value``. Every other
Approach or Reflect line is one ``unchecked`` directive: it is shown, and never guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from ovtui.plugins.adherence import ASK, Directive
from ovtui.plugins.wording.lessons import Lesson, parse_condition, parse_lesson
from ovtui.plugins.wording.sections import parse_sections, strip_bullet

_LESSON_KINDS = {"steps": "steps", "answered": "steps", "order": "before", "confirm": "confirm"}
_GUARD = re.compile(r"^(?:IF|WHEN)\s+(?P<when>.+?)\s*(?:,\s*)?THEN\s+(?P<body>.+)$", re.IGNORECASE)
_WHEN = re.compile(r"^(?P<body>.+?)\s+when\s+(?P<when>.+)$", re.IGNORECASE)
_LITERAL_FACT = re.compile(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*=!?[a-z0-9_]+$")
_TOOL = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_ASKS = re.compile(r"\bconfirm", re.IGNORECASE)


def _conditions(text: str) -> tuple[str, ...] | None:
    """A situation as ``key=value`` facts; None when it is not one ovtui can read."""
    parts = [p.strip() for p in re.split(r"\s+and\s+", text.strip().rstrip(".,"))]
    if all(_LITERAL_FACT.match(p) for p in parts):
        return tuple(parts)
    facts = parse_condition(text.strip().rstrip(".,").lower())
    return tuple(f"{k}={v}" for k, v in sorted(facts.items())) if facts else None


def _from_lesson(lesson: Lesson, line: str) -> Directive:
    kind = _LESSON_KINDS.get(lesson.kind, lesson.kind)
    if kind not in ("steps", "before", "confirm", "after", "always", "never"):
        return Directive("unchecked", (), line=line)  # what happened after an error: no fixed call
    conditions = tuple(f"{k}={v}" for k, v in lesson.facts)
    return Directive(kind, lesson.tools, conditions, line)  # type: ignore[arg-type]


def _tools(text: str, known: Collection[str]) -> list[str]:
    found = [t for t in _TOOL.findall(text) if not known or t in known]
    return list(dict.fromkeys(found))


def _plain(body: str, conditions: tuple[str, ...], line: str, known: Collection[str]) -> Directive | None:
    if "→" in body or "->" in body:
        steps: list[str] = []
        for chunk in re.split(r"→|->", body):
            tools = _tools(chunk, known)
            steps += tools[:1] or ([ASK] if _ASKS.search(chunk) else [])
        return Directive("steps", tuple(steps), conditions, line) if len(steps) >= 2 else None
    head = body.split(None, 1)[0].upper() if body.split() else ""
    if head not in ("ALWAYS", "NEVER"):
        return None
    before, _, after_before = body.partition(" before ")
    later_text, _, _ = after_before.partition(" after ")
    first, _, trigger = body.partition(" after ")
    if head == "NEVER":
        tools = _tools(body, known)
        return Directive("never", (tools[0],), conditions, line) if len(tools) == 1 else None
    if after_before:
        later = _tools(later_text, known)
        if _ASKS.search(before) and len(later) == 1:
            return Directive("confirm", (later[0],), conditions, line)
        earlier = _tools(before, known)
        if len(earlier) == 1 and len(later) == 1:
            return Directive("before", (earlier[0], later[0]), conditions, line)
        return None
    if trigger:
        follow, triggers = _tools(first, known), _tools(trigger, known)
        ok = len(follow) == 1 and len(triggers) == 1
        return Directive("after", (follow[0], triggers[0]), conditions, line) if ok else None
    tools = _tools(body, known)
    return Directive("always", (tools[0],), conditions, line) if len(tools) == 1 else None


@lru_cache(maxsize=8192)
def _read(text: str, line: str, known: frozenset[str]) -> Directive:
    lesson = parse_lesson(text)
    if lesson is not None:
        unknown = known and any(t != ASK and t not in known for t in lesson.tools)
        return Directive("unchecked", (), line=line) if unknown else _from_lesson(lesson, line)
    body, conditions = text.rstrip("."), tuple[str, ...]()
    guard = _GUARD.match(body) or _WHEN.match(body)
    if guard is not None:
        read = _conditions(guard.group("when"))
        if read is None:
            return Directive("unchecked", (), line=line)  # a situation no record shows
        body, conditions = guard.group("body").strip(), read
    return _plain(body, conditions, line, known) or Directive("unchecked", (), line=line)


def read_line(line: str, known: Collection[str] = ()) -> Directive:
    """The directive one line states (``known``: the tools there are; none: any snake_case name)."""
    text = strip_bullet(line)
    return _read(text, text, frozenset(known))


def directives_of(content: str, known: Collection[str] = ()) -> list[Directive]:
    """Each Approach and Reflect line's directive, each once, in order."""
    sections = parse_sections(content)
    found = [read_line(line, known) for line in [*sections.approach, *sections.reflect]]
    return list(dict.fromkeys(found))
