"""Case memories ↔ training Cases.

A case memory has OpenViking's shape: ``case_name``, ``task_signature``, ``input`` and ``rubric`` as
compact JSON *strings*, ``evidence`` and ``summary``. A case extracted by either tool becomes a
training Case here (and a Case becomes a case memory), so a session's cases can be trained on.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from ovtui.core.bounded_json import JsonError, parse_json
from ovtui.core.domain import Case, Rubric
from ovtui.core.errors import MemoryFormatError
from ovtui.core.fileformat import MemoryFile
from ovtui.memory.types import CASES


def _json_object(memory: MemoryFile, key: str, source: str) -> dict[str, Any]:
    raw = memory.fields.get(key)
    if isinstance(raw, dict):
        return raw  # tolerated: a hand-written file may hold the object itself
    if not isinstance(raw, str) or not raw.strip():
        raise MemoryFormatError(source, f"case field {key!r} is missing (a JSON object string)")
    try:
        value = parse_json(raw, source=source)
    except JsonError as exc:
        raise MemoryFormatError(source, f"case field {key!r} is {exc.reason}") from None
    if not isinstance(value, dict):
        raise MemoryFormatError(source, f"case field {key!r} must hold a JSON object")
    return value


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def case_from_memory(memory: MemoryFile, *, source: str | None = None) -> Case:
    """The training Case a case memory describes; errors name the file and the field."""
    where = source or memory.uri or "<case>"
    name = memory.fields.get("case_name")
    signature = memory.fields.get("task_signature")
    if not isinstance(name, str) or not name:
        raise MemoryFormatError(where, "case field 'case_name' is missing")
    rubric_data = _json_object(memory, "rubric", where)
    rubric_data.setdefault("name", name)
    try:
        rubric = Rubric.model_validate(rubric_data)
    except ValidationError as exc:
        err = exc.errors()[0]
        at = ".".join(str(p) for p in err["loc"])
        raise MemoryFormatError(where, f"case field 'rubric' {at}: {err['msg']}") from None
    metadata: dict[str, Any] = {"source_uri": memory.uri} if memory.uri else {}
    for key in ("evidence", "summary"):
        if isinstance(memory.fields.get(key), str):
            metadata[key] = memory.fields[key]
    return Case(
        name=name,
        task_signature=signature if isinstance(signature, str) else "",
        input=_json_object(memory, "input", where),
        rubric=rubric,
        metadata=metadata,
    )


def memory_from_case(case: Case, *, evidence: str | None = None) -> MemoryFile:
    """A case memory for ``case``, in OpenViking's shape (input and rubric as compact JSON strings)."""
    input_text = _compact(case.input)
    rubric_text = _compact(case.rubric.model_dump(exclude_defaults=True))
    content = (
        f"# {case.name}\n\n## Task Signature\n{case.task_signature}\n\n## Input\n{input_text}\n\n"
        f"## Rubric\n{rubric_text}"
    )
    if evidence:
        content += f"\n\n## Evidence\n{evidence}"
    fields = {
        "case_name": case.name,
        "task_signature": case.task_signature,
        "input": input_text,
        "rubric": rubric_text,
        "evidence": evidence,
        "version": 1,
        "memory_type": CASES,
    }
    return MemoryFile(content=content, fields=fields)
