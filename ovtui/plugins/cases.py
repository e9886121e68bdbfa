"""Cases from a JSON Lines file (one Case a line), every bad line named by its path and number: how
the local datasets are read, and what an environment shipping its own cases reads them with."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ovtui.core.bounds import line_too_long
from ovtui.core.domain import Case
from ovtui.core.errors import OvtuiError, first_problem
from ovtui.storage.reading import jsonl_lines


class DatasetError(OvtuiError):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


def read_cases(path: Path, *, display: str | None = None) -> tuple[list[Case], list[str]]:
    """Parse a JSONL case file; returns the valid cases and one problem per bad line (path:line)."""
    shown = display or str(path)
    cases: list[Case] = []
    problems: list[str] = []
    try:
        for number, line in jsonl_lines(path):
            if line is None:
                problems.append(f"{shown}:{number}: {line_too_long()}")
                continue
            try:
                cases.append(Case.model_validate_json(line))
            except ValidationError as exc:
                problems.append(f"{shown}:{number}: {first_problem(exc)}")
    except OSError as exc:
        return [], [f"{shown}: cannot read: {exc.strerror or exc}"]  # the path is said once
    return cases, problems
