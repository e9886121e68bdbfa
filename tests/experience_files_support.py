"""Experiences read from a folder of Markdown files, as a person would hand them to the agent."""

from __future__ import annotations

from pathlib import Path

from ovtui.core.domain import Experience, PolicyStatus

ROOT = "viking://user/default/memories/experiences"


def experiences_in(folder: Path) -> list[Experience]:
    """One draft experience per ``*.md`` file of ``folder``, named after the file, in name order."""
    return [
        Experience(
            name=f.stem,
            uri=f"{ROOT}/{f.stem}.md",
            version=1,
            status=PolicyStatus.DRAFT,
            content=f.read_text(),
        )
        for f in sorted(folder.glob("*.md"))
    ]
