"""What a JSON request body may hold beyond what JSON's grammar allows: text that UTF-8 can store
and numbers that are numbers.

Python's ``json`` reads ``"\\ud800"`` as a lone surrogate (text no file can hold: writing it fails
later, far from the request) and ``NaN``, ``Infinity`` and ``1e400`` as floats no JSON file can
hold (they were stored as ``null``). ``parse_json_body`` reads a body as the routes will and names
the first such value by its place (``parts.0.tool_input.q``), so the request is refused with the
field instead of being stored wrong.
"""

from __future__ import annotations

import json
import math
from typing import Any

Where = list[str | int]


class UncleanJson(ValueError):
    """A value JSON parsed but ovtui cannot store, at ``where`` in the body."""

    def __init__(self, where: Where, problem: str) -> None:
        super().__init__(problem)
        self.where = where
        self.problem = problem


class _NotANumber(ValueError):
    def __init__(self, literal: str) -> None:
        super().__init__(literal)
        self.literal = literal


def _constant(literal: str) -> float:
    raise _NotANumber(literal)  # NaN, Infinity, -Infinity: not JSON numbers


def _finite(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _NotANumber(literal)  # 1e400: beyond what a float holds
    return value


def lone_surrogate(text: str) -> int | None:
    """The position of the first lone surrogate in ``text`` (None: it encodes as UTF-8)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _surrogate_problem(text: str) -> str | None:
    at = lone_surrogate(text)
    if at is None:
        return None
    return f"a lone surrogate (U+{ord(text[at]):04X}) at character {at} is not text: send valid Unicode"


def find_unclean(value: Any, where: Where | None = None) -> UncleanJson | None:
    """The first string (key or value) holding a lone surrogate, or float that is not finite."""
    where = where or []
    if isinstance(value, str):
        problem = _surrogate_problem(value)
        return UncleanJson(where, problem) if problem else None
    if isinstance(value, float) and not math.isfinite(value):
        return UncleanJson(where, f"{value} is not a JSON number (finite numbers only)")
    if isinstance(value, dict):
        for key, item in value.items():
            problem = _surrogate_problem(key)
            if problem:
                return UncleanJson([*where, ascii(key)[1:-1]], f"the key: {problem}")
            found = find_unclean(item, [*where, key])
            if found:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = find_unclean(item, [*where, index])
            if found:
                return found
    return None


def parse_json_body(body: bytes) -> Any:
    """``body`` as JSON, the way the routes read it, refusing what cannot be stored
    (``UncleanJson``); a body that is not JSON at all raises ``json.JSONDecodeError`` as usual."""
    try:
        value = json.loads(body, parse_constant=_constant, parse_float=_finite)
    except _NotANumber as exc:
        # json does not say where it was: find it by parsing again with the literal let through.
        loose = json.loads(body)
        found = find_unclean(loose)
        raise found or UncleanJson([], f"{exc.literal} is not a JSON number (finite numbers only)") from None
    found = find_unclean(value)
    if found:
        raise found
    return value
