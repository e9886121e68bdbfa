"""Which lines of an experience the configured agent cannot act on, so a person is told, not ignored.

Only an agent that reads experiences by rules can say this; the scripted sample agent can (its
vocabulary, ``ovtui.environments.sample.guidance``). An LLM agent reads anything, so nothing is
reported for it.
``ovtui check``, the Memories screen and the Review diff all ask here.
"""

from __future__ import annotations

from functools import lru_cache

READERS = {"sample": "the sample agent"}


def unread_lines(agent: str, content: str) -> list[tuple[int, str]]:
    """(line number in ``content``, line) for each Approach/Reflect line ``agent`` cannot use."""
    if agent != "sample":
        return []
    from ovtui.environments.sample.guidance import unread_lines as sample_unread

    return sample_unread(content)


def unread_notes(agent: str, content: str) -> list[tuple[int, str]]:
    """(line number, ``line 4 is not understood by the sample agent: - Be warm.``) for each such line."""
    return list(_notes(agent, content))


@lru_cache(maxsize=64)
def _notes(agent: str, content: str) -> tuple[tuple[int, str], ...]:
    # Cached per body: Review and the Memories screen ask again each time an item is shown, and a
    # 2,000-line body costs tens of ms to read even with each line's reading cached.
    reader = READERS.get(agent, agent)
    notes = []
    for number, line in unread_lines(agent, content):
        excerpt = line if len(line) <= 60 else line[:57] + "..."
        notes.append((number, f"line {number} is not understood by {reader}: {excerpt}"))
    return tuple(notes)
