"""JSON text parsed with a bound on its nesting: the one JSON parser for what ovtui reads.

Python's ``json`` recurses once per nesting level, so ``[`` × 100,000 in a file anyone may edit
(a memory's fields, a plan, a history record, the journal, the hotness log) ends in a
``RecursionError`` far from the file that caused it. pydantic-core's parser stops at
``MAX_JSON_DEPTH`` levels and says where; it is what ``model_validate_json`` parses with too, so
plain values (here) and models (``storage.reading.read_model``) have the same limit. Over it, or
not JSON at all, is a ``JsonError`` naming the source: a ``ValueError`` as well, so code that
already catches a decoding error catches this one.

Sizes are bounded where the bytes are read (``storage.reading``), before they are parsed.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json

from ovtui.core.errors import OvtuiError

# pydantic-core's own recursion limit (fixed in its parser): a value nested deeper is refused. Far
# above anything ovtui writes (a memory's fields nest a few levels; a plan or record under ten).
MAX_JSON_DEPTH = 200
_DEPTH_MESSAGE = "recursion limit exceeded"


class JsonError(OvtuiError, ValueError):
    """A JSON text that does not parse or nests too deeply; ``source`` names where it came from."""

    def __init__(self, source: str, reason: str) -> None:
        self.source = source
        self.reason = reason
        super().__init__(f"{source}: {reason}")


def json_problem(exc: ValueError) -> str:
    """What a parse error of pydantic-core says, in the words ovtui uses."""
    message = str(exc)
    if _DEPTH_MESSAGE in message:
        where = message.split(_DEPTH_MESSAGE, 1)[1].strip()
        return f"JSON nested deeper than {MAX_JSON_DEPTH} levels ({where or 'near the start'})"
    return f"not valid JSON: {message}"


def parse_json(data: str | bytes, *, source: str) -> Any:
    """The value of a JSON text; ``JsonError`` (naming ``source``) when it does not parse or nests
    deeper than ``MAX_JSON_DEPTH``."""
    try:
        return from_json(data)
    except ValueError as exc:
        raise JsonError(source, json_problem(exc)) from None
