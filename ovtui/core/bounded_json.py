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

import re
from typing import Any

from pydantic_core import from_json

from ovtui.core.errors import OvtuiError

# pydantic-core's own recursion limit (fixed in its parser): a value nested deeper is refused. Far
# above anything ovtui writes (a memory's fields nest a few levels; a plan or record under ten).
MAX_JSON_DEPTH = 200
_DEPTH_MESSAGE = "recursion limit exceeded"
_WHERE = re.compile(r"at line (\d+) column \d+")


class JsonError(OvtuiError, ValueError):
    """A JSON text that does not parse or nests too deeply (``too_deep``); ``source`` names where
    it came from, ``line`` the line of the text where the parser stopped (1 when it does not say)."""

    def __init__(self, source: str, reason: str, line: int = 1, *, too_deep: bool = False) -> None:
        self.source = source
        self.reason = reason
        self.line = line
        self.too_deep = too_deep
        super().__init__(f"{source}: {reason}")


def parse_json(data: str | bytes, *, source: str) -> Any:
    """The value of a JSON text; ``JsonError`` (naming ``source``) when it does not parse or nests
    deeper than ``MAX_JSON_DEPTH``."""
    try:
        return from_json(data)
    except ValueError as exc:
        message = str(exc)
        found = _WHERE.search(message)
        line = int(found.group(1)) if found else 1
        if _DEPTH_MESSAGE in message:
            where = message.split(_DEPTH_MESSAGE, 1)[1].strip() or "near the start"
            reason = f"JSON nested deeper than {MAX_JSON_DEPTH} levels ({where})"
            raise JsonError(source, reason, line, too_deep=True) from None
        raise JsonError(source, f"not valid JSON: {message}", line) from None
