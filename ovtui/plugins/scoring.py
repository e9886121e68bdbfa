"""``ovtui env score``: recorded rollouts (JSONL) in, one score line per input line out, in order.

A line that is not JSON, not an object, or names an unknown task is reported on stderr with its
line number (and an ``{"line": N, "error": …}`` line on stdout, so output lines match input
lines); the rest are still scored.
"""

from __future__ import annotations

import json
from typing import Any, TextIO

from ovtui.core.bounded_json import JsonError, parse_json
from ovtui.plugins.environment import Environment, EnvironmentError_


class RecordError(ValueError):
    """A recorded rollout that cannot be scored; the message names the field."""


def record_of(line: str) -> dict[str, Any]:
    """One JSONL line as an object (RecordError otherwise: not JSON, nested too deeply, not an object)."""
    try:
        record = parse_json(line, source="line")
    except JsonError as exc:
        raise RecordError(exc.reason) from None
    if not isinstance(record, dict):
        raise RecordError("a line must be a JSON object")
    return record


def score_lines(environment: Environment, lines: TextIO, out: TextIO, err: TextIO, *, source: str) -> int:
    """Score every line; returns how many lines were bad."""
    scorer = getattr(environment, "score_record", None)
    if scorer is None:
        raise EnvironmentError_(f"{environment.name} does not score recorded rollouts")
    bad = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            result = scorer(record_of(line))
        except RecordError as exc:
            bad += 1
            print(f"{source}:{number}: {exc}", file=err)
            out.write(json.dumps({"line": number, "error": str(exc)}) + "\n")
            continue
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    return bad
