"""The memory file docs/workspace.md shows reads as it says, and the one-line form it warns of is
refused by name (a new user copied a one-line trailer and was left out of training silently)."""

from __future__ import annotations

import pytest
from repo_paths import REPO

from ovtui.core.errors import MemoryFormatError
from ovtui.core.fileformat import parse_memory


def shown_example() -> str:
    text = (REPO / "docs" / "workspace.md").read_text(encoding="utf-8")
    section = text.split("## A memory file", 1)[1]
    return section.split("```\n", 2)[1].rstrip("\n")


def test_the_documented_memory_file_reads() -> None:
    memory = parse_memory(shown_example())
    assert memory.fields["name"] == "booking_cancellation" and memory.fields["memory_type"] == "experiences"
    assert memory.content.startswith("## Situation")


def test_the_one_line_form_is_refused_with_its_reason() -> None:
    with pytest.raises(MemoryFormatError, match="must start on the line after"):
        parse_memory('body\n\n<!-- MEMORY_FIELDS {"name": "x"} -->')
