"""An experience body as the offline learner edits it: its lessons plus whatever else a person wrote.

Lines in the learner's wording become lessons and are consolidated together (``consolidate``);
every other line is kept verbatim in its section, before the lessons, so editing a file by hand and
training on stay compatible.
"""

from __future__ import annotations

from collections.abc import Sequence

from ovtui.plugins.wording.lessons import Lesson, parse_lesson
from ovtui.plugins.wording.sections import ExperienceSections, parse_sections
from ovtui.train.backends.offline.consolidate import consolidate


def split_lessons(sections: ExperienceSections) -> tuple[ExperienceSections, list[Lesson]]:
    """The sections without the learner's lines, and those lines as lessons."""
    rest = sections.copy()
    lessons: list[Lesson] = []
    for section in ("Approach", "Reflect"):
        kept = []
        for line in sections.lines(section):
            lesson = parse_lesson(line)
            if lesson is None:
                kept.append(line)
            else:
                lessons.append(lesson)
        rest.lines(section)[:] = kept
    return rest, lessons


def combine(
    contents: list[str], new_lessons: Sequence[Lesson] = (), *, distinguish: bool = True
) -> ExperienceSections:
    """One body from several versions of it (the first is the base) plus newly learned lessons."""
    combined = ExperienceSections()
    lessons: list[Lesson] = []
    for content in contents:
        rest, found = split_lessons(parse_sections(content))
        combined.absorb(rest)
        lessons.extend(found)
    for lesson in consolidate([*lessons, *new_lessons], distinguish=distinguish):
        combined.add(lesson.section, lesson.render(), capped=False)
    return combined
