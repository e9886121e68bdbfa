"""Reading a cases file (JSONL) for ``ovtui check``: whole records, misspelt keys, one error per case.

A case pretty-printed over several lines is one problem ("case spans lines 3–90"), not one per line.
A key the Case model does not know is reported with the nearest known key ("unknown key
'task_signatur' — did you mean 'task_signature'?") instead of pydantic's two errors about it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from rapidfuzz import process

from ovtui.domain import Case, Rubric, RubricCriterion


@dataclass(frozen=True)
class Record:
    first_line: int
    last_line: int
    value: Any = None
    error: str = ""


def records(text: str) -> Iterator[Record]:
    """Each case of a JSONL text with the lines it took; a multi-line object counts once."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    decoder = json.JSONDecoder()
    number = 0
    while number < len(lines):
        line = lines[number]
        if not line.strip():
            number += 1
            continue
        try:
            yield Record(number + 1, number + 1, json.loads(line))
            number += 1
            continue
        except json.JSONDecodeError as exc:
            error = f"not valid JSON: {exc.msg} (column {exc.colno})"
        start = offsets[number] + len(line) - len(line.lstrip())
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            yield Record(number + 1, number + 1, error=error)
            number += 1
            continue
        last = text.count("\n", 0, end - 1) + 1
        yield Record(
            number + 1,
            last,
            value,
            error=f"a case spans lines {number + 1}–{last}; a .jsonl file holds one case per line",
        )
        number = last


def _unknown(raw: Any, model: type[BaseModel], where: str) -> list[str]:
    if not isinstance(raw, dict):
        return []
    known = list(model.model_fields)
    problems = []
    for key in raw:
        if key not in known:
            match = process.extractOne(str(key), known, score_cutoff=70)
            hint = f" — did you mean {match[0]!r}?" if match else f" (known: {', '.join(known)})"
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
