"""Which lines of an experience the configured agent cannot act on, so a person is told, not ignored.

Only an agent that reads experiences by rules can say this: it has an ``ExperienceReader`` (the
scripted sample agent does, given by its environment). An agent without one (None) reads anything,
like an LLM, so nothing is reported for it. ``ovtui check``, the Memories screen and the Review diff
all ask here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ovtui.core.interfaces import ExperienceReader
from ovtui.train.review.gates.base import GateReport, PlanToCheck

EXCERPT = 60  # characters of a line a note quotes


def unread_notes(reader: ExperienceReader | None, content: str) -> list[tuple[int, str]]:
    """(line number, ``line 4 is not understood by the sample agent: - Be warm.``) for each line of
    ``content`` that ``reader`` cannot use; none when there is no reader."""
    return list(_notes(reader, content)) if reader is not None else []


@lru_cache(maxsize=64)
def _notes(reader: ExperienceReader, content: str) -> tuple[tuple[int, str], ...]:
    # Cached per body: Review and the Memories screen ask again each time an item is shown, and a
    # 2,000-line body costs tens of ms to read even with each line's reading cached.
    notes = []
    for number, line in reader.unread_lines(content):
        excerpt = line if len(line) <= EXCERPT else line[: EXCERPT - 3] + "..."
        notes.append((number, f"line {number} is not understood by {reader.name}: {excerpt}"))
    return tuple(notes)


@dataclass(frozen=True)
class ReadabilityGate:
    """Each item's lines ``reader`` (the configured agent's) cannot act on, as notes in its
    ``metadata["unread_lines"]``, which Review shows."""

    reader: ExperienceReader
    topic = "readability"

    async def check(self, planned: PlanToCheck) -> GateReport:
        for item in planned.plan.items:
            unread = unread_notes(self.reader, item.after_content or "")
            if unread:
                item.metadata["unread_lines"] = [note for _, note in unread]
        return GateReport()
