"""The OpenViking memory file format.

A file is a Markdown body (the ``content`` field), a blank line, then exactly one trailing comment
that holds every other field as JSON indented by two spaces::

    ## Situation
    ...

    <!-- MEMORY_FIELDS
    {
      "experience_name": "x",
      "version": 2
    }
    -->

``content`` never appears inside the JSON, and keys whose value is null are not written. A file
without the trailing comment is still a memory (all fields empty) so hand-written notes load.

Written as OpenViking writes it, so a file both tools touch does not churn: ``-->`` inside the JSON
is escaped as ``--\u003e`` (a raw one would end the comment for OpenViking's parser),
``memory_type`` is the last key, and there is no final newline. A missing ``version`` reads as 1.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ovtui.core.errors import MemoryFormatError

# The memory_type values the training loop itself names (defined here, the leaf every layer may
# import, and re-exported by memory/types.py: code outside the domain imports them from there).
EXPERIENCES = "experiences"
TRAJECTORIES = "trajectories"
CASES = "cases"

FIELDS_OPEN = "<!-- MEMORY_FIELDS"
FIELDS_CLOSE = "-->"
# ``-->`` inside a JSON string, escaped so it cannot close the comment (JSON reads it back as is).
ESCAPED_CLOSE = "--\\u003e"
# The comment must close the file: only whitespace may follow it.
_OPEN = re.compile(r"<!-- MEMORY_FIELDS[ \t]*\r?\n")  # a file saved with Windows line ends reads too


def _closing(text: str) -> tuple[int, int] | None:
    """Span of the closing ``-->`` (with the newline before it) when only whitespace follows it.
    A plain rfind: a regex anchored at the end would still be tried at every position."""
    at = text.rfind(FIELDS_CLOSE)
    if at < 0 or text[at + len(FIELDS_CLOSE) :].strip():
        return None
    return (at - 1 if at and text[at - 1] == "\n" else at), at + len(FIELDS_CLOSE)


class MemoryFile(BaseModel):
    """One parsed memory file: its body plus its fields (without ``content``)."""

    model_config = ConfigDict(extra="forbid")

    uri: str | None = None
    content: str = ""
    fields: dict[str, Any] = Field(default_factory=dict)

    @property
    def version(self) -> int:
        value = self.fields.get("version", 1)
        return value if isinstance(value, int) and not isinstance(value, bool) else 1

    def render(self) -> str:
        return render_memory(self.content, self.fields)

    def without(self, *keys: str) -> dict[str, Any]:
        return {k: v for k, v in self.fields.items() if k not in keys}


def normalise_content(content: str) -> str:
    """The body as stored: no trailing whitespace lines, so parse(render(x)) is exact."""
    return content.rstrip()


def render_memory(content: str, fields: dict[str, Any]) -> str:
    clean = {k: v for k, v in fields.items() if v is not None and k not in ("content", "memory_type")}
    if fields.get("memory_type") is not None:
        clean["memory_type"] = fields["memory_type"]
    body = normalise_content(content)
    payload = json.dumps(clean, indent=2, ensure_ascii=False).replace(FIELDS_CLOSE, ESCAPED_CLOSE)
    head = f"{body}\n\n" if body else ""
    return f"{head}{FIELDS_OPEN}\n{payload}\n{FIELDS_CLOSE}"


def quoted_marker_line(memory: MemoryFile, text: str) -> int | None:
    """The line of a ``<!-- MEMORY_FIELDS`` marker that ``text``'s body (``memory.content``) quotes.
    ovtui reads such a file correctly, but OpenViking takes the first marker as the trailer."""
    if FIELDS_OPEN not in memory.content:
        return None
    return text.count("\n", 0, text.index(FIELDS_OPEN)) + 1


def _misplaced_comment(text: str, source: str, *, closed: bool) -> MemoryFormatError:
    """Why a ``<!-- MEMORY_FIELDS`` comment is not the file's trailer, at the line that shows it."""
    marker = text.rindex(FIELDS_OPEN)
    marker_line = text.count("\n", 0, marker) + 1
    if closed:
        return MemoryFormatError(
            source, "the MEMORY_FIELDS JSON must start on the line after '<!-- MEMORY_FIELDS'", marker_line
        )
    end = text.find(FIELDS_CLOSE, marker)
    if end < 0:
        return MemoryFormatError(source, "MEMORY_FIELDS comment is never closed with '-->'", marker_line)
    after = end + len(FIELDS_CLOSE)
    trailing = after + len(text[after:]) - len(text[after:].lstrip())
    return MemoryFormatError(
        source,
        "text follows the MEMORY_FIELDS comment: it must be the last thing in the file",
        text.count("\n", 0, trailing) + 1,
    )


def parse_memory(text: str, *, source: str = "<memory>", uri: str | None = None) -> MemoryFile:
    """Parse a memory file; ``source`` names the file in errors (with the line of the problem).

    The body may itself quote the opening marker (a memory about memory files), and a field value
    may contain it too, so each marker before the closing ``-->`` is tried from the last one back:
    the trailer is the one whose JSON parses.
    """
    if "\x00" in text:
        raise MemoryFormatError(source, "contains a NUL byte (binary file?)")
    close = _closing(text) if FIELDS_OPEN in text else None
    opens = list(_OPEN.finditer(text, 0, close[1])) if close else []
    if not opens:
        if FIELDS_OPEN in text:
            raise _misplaced_comment(text, source, closed=close is not None)
        return MemoryFile(uri=uri, content=normalise_content(text), fields={})
    assert close is not None
    error: MemoryFormatError | None = None
    for opening in reversed(opens):
        raw = text[opening.end() : close[0]] if opening.end() <= close[0] else ""
        json_line = text.count("\n", 0, opening.end()) + 1
        try:
            fields = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            error = error or MemoryFormatError(
                source, f"MEMORY_FIELDS is not valid JSON: {exc.msg}", json_line + exc.lineno - 1
            )
            continue
        if not isinstance(fields, dict):
            error = error or MemoryFormatError(source, "MEMORY_FIELDS must hold a JSON object", json_line)
            continue
        fields.pop("content", None)
        fields = {k: v for k, v in fields.items() if v is not None}
        return MemoryFile(uri=uri, content=normalise_content(text[: opening.start()]), fields=fields)
    assert error is not None
    raise error
