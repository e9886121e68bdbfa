"""What the sample environment needs of a case, checked before a run rather than during it.

A case must carry a ``user_query``; every criterion a ``kind`` the environment grades and the
parameters that kind reads; tools named in parameters must be tools of the environment. Messages
name the criterion (by index and name) and the key, so the person can find it.
"""

from __future__ import annotations

from typing import Any

from ovtui.environments.sample.criteria import CRITERION_KINDS
from ovtui.environments.sample.tools import TOOL_SPECS
from ovtui.plugins import Case, did_you_mean

# The parameters each criterion kind reads (docs/cases.md), and which of them name tools.
REQUIRED_PARAMETERS: dict[str, tuple[str, ...]] = {
    "required_call": ("tool",),
    "forbidden_call": ("tool",),
    "order": ("before", "after"),
    "confirmed_before": ("tool",),
    "state": ("table", "key", "field", "equals"),
}
_TOOL_PARAMETERS = ("tool", "before", "after")


def _tool_names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def case_problems(case: Case) -> list[str]:
    problems: list[str] = []
    if not str(case.input.get("user_query", "")).strip():
        problems.append("input.user_query is missing: the sample agent has no request to answer")
    if not case.rubric.criteria:
        problems.append("rubric.criteria is empty: nothing to grade")
    for index, criterion in enumerate(case.rubric.criteria):
        where = f"rubric.criteria[{index}] ({criterion.name})"
        kind = str(criterion.metadata.get("kind", ""))
        if kind not in REQUIRED_PARAMETERS:
            known = ", ".join(CRITERION_KINDS)
            hint = did_you_mean(kind, CRITERION_KINDS)
            problems.append(f"{where}: unknown criterion kind {kind!r}{hint} (known: {known})")
            continue
        for parameter in REQUIRED_PARAMETERS[kind]:
            if parameter not in criterion.metadata:
                problems.append(f"{where}: kind {kind!r} needs metadata.{parameter}")
        for parameter in _TOOL_PARAMETERS:
            for tool in _tool_names(criterion.metadata.get(parameter, [])):
                if parameter in criterion.metadata and tool not in TOOL_SPECS:
                    hint = did_you_mean(tool, sorted(TOOL_SPECS))
                    problems.append(f"{where}: metadata.{parameter} names no sample tool: {tool!r}{hint}")
    return problems
