"""The leak gate: values of the cases a plan was learned from (ids, names, e-mails, amounts,
dates) that appear in lines an item adds. Such an item is never approved automatically."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ovtui.core.case_patterns import EMAIL, ISO_DATE
from ovtui.core.domain import Case, PolicyUpdatePlan
from ovtui.train.review.gates.base import GateReport, PlanToCheck

_MIXED_ID = re.compile(r"\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{5,}\b")
_NAME = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z'-]+)+$")
_AMOUNT = re.compile(r"^\d{2,}(?:\.\d+)?$")
_TOKEN = re.compile(r"[\w@.+-]+")


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool):
        return
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield str(key)
            yield from _strings(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _strings(inner)


def case_values(cases: Iterable[Case]) -> set[str]:
    """The values of cases that belong to one customer: ids, names, e-mails, amounts, dates."""
    values: set[str] = set()
    for case in cases:
        for text in _strings(case.input):
            text = text.strip()
            if EMAIL.fullmatch(text) or ISO_DATE.fullmatch(text) or _NAME.match(text) or _AMOUNT.match(text):
                values.add(text)
                if _NAME.match(text):
                    values.update(w for w in text.split() if len(w) > 2)
            elif _MIXED_ID.fullmatch(text):
                values.add(text)
            values.update(_MIXED_ID.findall(text))
            values.update(EMAIL.findall(text))
            values.update(ISO_DATE.findall(text))
    return values


def _added_lines(before: str | None, after: str | None) -> list[str]:
    old = set((before or "").splitlines())
    return [line for line in (after or "").splitlines() if line not in old]


def leaked_values(added: list[str], values: set[str]) -> list[str]:
    text = "\n".join(added)
    # Whole tokens only ("412" is not in "4120"); a value of several words is looked up as a phrase.
    tokens = {t.rstrip(".") for t in _TOKEN.findall(text)}
    found = {v for v in values if (v in text if " " in v else v in tokens)}
    found.update(EMAIL.findall(text))
    found.update(ISO_DATE.findall(text))
    return sorted(found)


def mark_leaks(plan: PolicyUpdatePlan, cases: Iterable[Case]) -> int:
    """Flag items whose added lines carry case-specific values; returns how many were flagged."""
    values = case_values(cases)
    flagged = 0
    for item in plan.items:
        leaks = leaked_values(_added_lines(item.before_content, item.after_content), values)
        if leaks:
            item.metadata["leaks"] = leaks
            flagged += 1
    return flagged


class LeakGate:
    topic = "leaks"

    async def check(self, planned: PlanToCheck) -> GateReport:
        flagged = mark_leaks(planned.plan, [a.rollout.case for a in planned.analyses])
        if not flagged:
            return GateReport()
        return GateReport(warning=f"{flagged} item(s) carry case-specific values: held for review")
