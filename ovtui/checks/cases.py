"""Reading a cases file (JSONL) for ``ovtui check``: whole records, misspelt keys, one error per case.

A case pretty-printed over several lines is one problem ("case spans lines 3–90"), not one per line.
A key the Case model does not know is reported with the nearest known key ("unknown key
'task_signatur' — did you mean 'task_signature'?") instead of pydantic's two errors about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import from_json

from ovtui.core.bounds import line_too_long
from ovtui.core.domain import Case, Rubric, RubricCriterion
from ovtui.core.suggest import did_you_mean


@dataclass(frozen=True)
class Record:
    first_line: int
    last_line: int
    value: Any = None
    error: str = ""


def _parse(data: bytes) -> tuple[Any, str]:
    """(value, "") or (None, why); pydantic's parser, so deep nesting is an error, not a crash."""
    try:
        return from_json(data), ""
    except ValueError as exc:
        return None, str(exc)


def records(lines: Iterable[tuple[int, bytes | None]], limit: int) -> Iterator[Record]:
    """Each case of a JSONL stream (line number, bytes or None when over the limit) with the lines
    it took: an object left open at the end of a line continues on the next (up to ``limit`` bytes
    in all), so a pretty-printed case is one record, not one error per line."""
    open_from, buffer = 0, b""
    last = 0
    for number, line in lines:
        last = number
        if line is None:
            if open_from:
                yield Record(open_from, number - 1, error="not valid JSON: an object is never closed")
                open_from, buffer = 0, b""
            yield Record(number, number, error=line_too_long(limit))
            continue
        if open_from:
            alone, alone_why = _parse(line) if not line[:1].isspace() else (None, "indented")
            if not alone_why and isinstance(alone, dict):  # a whole case: the open one never closed
                yield Record(open_from, number - 1, error="not valid JSON: an object is never closed")
                yield Record(number, number, alone)
                open_from, buffer = 0, b""
                continue
            buffer += line
            value, why = _parse(buffer)
            if not why:
                yield Record(open_from, number, value, _spread(open_from, number))
                open_from, buffer = 0, b""
            elif "EOF while parsing" not in why or len(buffer) > limit:
                yield Record(open_from, number, error=_spread(open_from, number) + f"; not valid JSON: {why}")
                open_from, buffer = 0, b""
            continue
        value, why = _parse(line)
        if not why:
            yield Record(number, number, value)
        elif "EOF while parsing" in why and line.lstrip().startswith(b"{"):
            open_from, buffer = number, line
        else:
            yield Record(number, number, error=f"not valid JSON: {why}")
    if open_from:
        yield Record(open_from, last, error="not valid JSON: an object is never closed")


def _spread(first: int, last: int) -> str:
    return f"a case spans lines {first}–{last}; a .jsonl file holds one case per line"


def _unknown(raw: Any, model: type[BaseModel], where: str) -> list[str]:
    if not isinstance(raw, dict):
        return []
    known = list(model.model_fields)
    problems = []
    for key in raw:
        if key not in known:
            hint = did_you_mean(str(key), known) or f" (known: {', '.join(known)})"
            problems.append(f"unknown key {where}{key!r}{hint}")
    return problems


def unknown_keys(raw: Any) -> list[str]:
    """Keys of a case, its rubric and its criteria that the models do not know."""
    problems = _unknown(raw, Case, "")
    rubric = raw.get("rubric") if isinstance(raw, dict) else None
    problems += _unknown(rubric, Rubric, "in rubric: ")
    criteria = rubric.get("criteria") if isinstance(rubric, dict) else None
    for index, criterion in enumerate(criteria if isinstance(criteria, list) else []):
        problems += _unknown(criterion, RubricCriterion, f"in rubric.criteria[{index}]: ")
    return problems


def validation_problems(raw: Any) -> tuple[Case | None, list[str]]:
    """The case, or None with what is wrong with it (unknown keys named once, with a suggestion)."""
    problems = unknown_keys(raw)
    try:
        return Case.model_validate(raw), problems
    except ValidationError as exc:
        for err in exc.errors():
            if err["type"] == "extra_forbidden":
                continue  # already named, with a suggestion
            where = ".".join(str(p) for p in err["loc"]) or "case"
            problems.append(f"not a valid case: {where}: {err['msg']}")
        return None, problems
