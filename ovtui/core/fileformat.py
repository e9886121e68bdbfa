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

Text that quotes the opening marker (a person's message about memory files, copied into a case)
is escaped too, so no parser takes it for the fields comment: in the JSON as ``\u003c!-- …``
(JSON reads it back as is), in the body as ``&lt;!-- MEMORY_FIELDS`` (Markdown shows it as
written; a body that itself holds ``&lt;!-- MEMORY_FIELDS`` gets one more ``amp;``, so every
body reads back exactly as it was written). A file whose lines end in CRLF (as some editors
write: its fields marker's line tells) reads the same as one with LF and is written back with CRLF.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ovtui.core.bounded_json import JsonError, parse_json
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
# The opening marker inside a JSON string, escaped the same way.
ESCAPED_OPEN_IN_JSON = "\\u003c" + FIELDS_OPEN[1:]
# In the body: ``<`` of a quoted marker becomes ``&lt;``, and the ``&`` of an already escaped one
# (``&lt;``, ``&amp;lt;``, …) one more ``&amp;``; reading takes one level off again.
_BODY_ESCAPE = re.compile(r"<(?=!-- MEMORY_FIELDS)|&(?=(?:amp;)*lt;!-- MEMORY_FIELDS)")
_BODY_UNESCAPE = re.compile(r"&lt;(?=!-- MEMORY_FIELDS)|&amp;(?=(?:amp;)*lt;!-- MEMORY_FIELDS)")
# How a file's lines end: as ovtui writes them, or as some editors do (written back the same).
LineEnding = Literal["\n", "\r\n"]
CRLF: Literal["\r\n"] = "\r\n"
# The comment must close the file: only whitespace may follow it.
_OPEN = re.compile(r"<!-- MEMORY_FIELDS[ \t]*\n")
_OPEN_ANY_ENDING = re.compile(r"<!-- MEMORY_FIELDS[ \t]*(\r?)\n")


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
    # How the file's lines ended on disk ("\r\n" as some editors write them): written back the same.
    line_ending: LineEnding = Field(default="\n", exclude=True)

    @property
    def version(self) -> int:
        value = self.fields.get("version", 1)
        return value if isinstance(value, int) and not isinstance(value, bool) else 1

    def render(self) -> str:
        return render_memory(self.content, self.fields, line_ending=self.line_ending)

    def without(self, *keys: str) -> dict[str, Any]:
        return {k: v for k, v in self.fields.items() if k not in keys}


def normalise_content(content: str) -> str:
    """The body as stored: no trailing whitespace lines, so parse(render(x)) is exact."""
    return content.rstrip()


def _escape_body(body: str) -> str:
    return _BODY_ESCAPE.sub(lambda m: "&lt;" if m.group() == "<" else "&amp;", body)


def _unescape_body(body: str) -> str:
    if "!-- MEMORY_FIELDS" not in body:  # the common case: nothing to look for
        return body
    return _BODY_UNESCAPE.sub(lambda m: "<" if m.group() == "&lt;" else "&", body)


def render_memory(content: str, fields: dict[str, Any], *, line_ending: LineEnding = "\n") -> str:
    clean = {k: v for k, v in fields.items() if v is not None and k not in ("content", "memory_type")}
    if fields.get("memory_type") is not None:
        clean["memory_type"] = fields["memory_type"]
    body = _escape_body(normalise_content(content))
    payload = json.dumps(clean, indent=2, ensure_ascii=False)
    payload = payload.replace(FIELDS_CLOSE, ESCAPED_CLOSE).replace(FIELDS_OPEN, ESCAPED_OPEN_IN_JSON)
    head = f"{body}\n\n" if body else ""
    text = f"{head}{FIELDS_OPEN}\n{payload}\n{FIELDS_CLOSE}"
    return text.replace("\n", CRLF) if line_ending == CRLF else text


def quoted_marker_line(memory: MemoryFile, text: str) -> int | None:
    """The line of a ``<!-- MEMORY_FIELDS`` marker that ``text``'s body quotes unescaped (as a
    person or an older ovtui may have written it; ovtui escapes it). ovtui reads such a file
    correctly, but OpenViking takes the first marker as the trailer."""
    first = text.find(FIELDS_OPEN)
    if first < 0 or FIELDS_OPEN not in memory.content:
        return None
    trailer = text.rfind(FIELDS_OPEN) if _closing(text) else len(text)
    return text.count("\n", 0, first) + 1 if first < trailer else None


def _line_ending(text: str) -> LineEnding:
    """The file's style: its fields marker's line ending (the line an editor rewrote with the rest,
    while a CRLF inside the body of an LF file is text like any other); without a marker, CRLF
    when every line ends so."""
    if CRLF not in text:
        return "\n"
    for marker in reversed(list(_OPEN_ANY_ENDING.finditer(text))):
        return CRLF if marker.group(1) else "\n"
    return CRLF if text.count(CRLF) == text.count("\n") else "\n"


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
    line_ending = _line_ending(text)
    if line_ending == CRLF:  # every CRLF reads as LF (a CR of its own stays in the text)
        text = text.replace(CRLF, "\n")
    close = _closing(text) if FIELDS_OPEN in text else None
    opens = list(_OPEN.finditer(text, 0, close[1])) if close else []
    if not opens:
        if FIELDS_OPEN in text:
            raise _misplaced_comment(text, source, closed=close is not None)
        return MemoryFile(
            uri=uri, content=_unescape_body(normalise_content(text)), fields={}, line_ending=line_ending
        )
    assert close is not None
    error: MemoryFormatError | None = None
    for opening in reversed(opens):
        raw = text[opening.end() : close[0]] if opening.end() <= close[0] else ""
        json_line = text.count("\n", 0, opening.end()) + 1
        try:
            fields = parse_json(raw, source=source) if raw.strip() else {}
        except JsonError as exc:
            error = error or MemoryFormatError(
                source, f"MEMORY_FIELDS is {exc.reason}", json_line + exc.line - 1
            )
            continue
        if not isinstance(fields, dict):
            error = error or MemoryFormatError(source, "MEMORY_FIELDS must hold a JSON object", json_line)
            continue
        fields.pop("content", None)
        fields = {k: v for k, v in fields.items() if v is not None}
        content = _unescape_body(normalise_content(text[: opening.start()]))
        return MemoryFile(uri=uri, content=content, fields=fields, line_ending=line_ending)
    assert error is not None
    raise error
