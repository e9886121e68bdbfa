"""What a plan will do before it is applied: validation flips, evidence, and leaked case values.

- **Validation** (``ValidationGate``): the plan's items are applied to an in-memory overlay of the
  policy set — never to the workspace — and the held-out validation cases are run with and without
  them, for the whole plan and for each item alone. The result ("validation 9/12 → 11/12, flips
  +3 −1", which cases flipped and what the agent did in them) goes into the plan's and the items'
  metadata, where Review shows it and the ``gate`` policy reads it.
- **Evidence and counter-evidence**: for each item, the batch's trajectories of the same intent
  that support it, and the passing ones the change might break.
- **Leakage**: values of the cases a plan was learned from (ids, names, e-mails, amounts, dates)
  that appear in lines an item adds; such an item is never approved automatically.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from ovtui.core.case_patterns import EMAIL, ISO_DATE
from ovtui.core.context import ExecutionContext
from ovtui.core.domain import (
    Case,
    Experience,
    ExperienceSet,
    PolicyPlanItem,
    PolicyStatus,
    PolicyUpdatePlan,
    Rollout,
    RolloutAnalysis,
)
from ovtui.core.interfaces import RolloutExecutor
from ovtui.memory.types import EXPERIENCES

_MIXED_ID = re.compile(r"\b(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{5,}\b")
_NAME = re.compile(r"^[A-Z][a-z]+(?: [A-Z][a-z'-]+)+$")
_AMOUNT = re.compile(r"^\d{2,}(?:\.\d+)?$")
_TOKEN = re.compile(r"[\w@.+-]+")


# --- validation ------------------------------------------------------------------------------------


def split_validation(cases: list[Case], fraction: float) -> tuple[list[Case], list[Case]]:
    """(train, validation): a stable share of the cases by a hash of their names, so a case is
    held out in every run alike and never trained on."""
    if fraction <= 0:
        return cases, []

    def held_out(case: Case) -> bool:
        digest = hashlib.sha256(case.name.encode()).digest()
        return int.from_bytes(digest[:4], "big") / 2**32 < fraction

    return [c for c in cases if not held_out(c)], [c for c in cases if held_out(c)]


def overlay(policy_set: ExperienceSet, items: Iterable[PolicyPlanItem]) -> ExperienceSet:
    """The policy set as it would be after ``items`` — in memory only (items of other memory types
    do not change the policy)."""
    policies = {p.name: p for p in policy_set.policies}
    for item in items:
        if item.memory_type != EXPERIENCES:
            continue
        name = item.target_name
        if item.kind == "delete":
            policies.pop(name, None)
            continue
        current = policies.get(name)
        content = item.after_content or ""
        policies[name] = (
            current.model_copy(update={"content": content})
            if current is not None
            else Experience(
                name=name,
                uri=item.target_uri or f"{policy_set.root_uri}/{name}.md",
                version=1,
                status=PolicyStatus.DRAFT,
                content=content,
            )
        )
    return policy_set.model_copy(update={"policies": sorted(policies.values(), key=lambda p: p.name)})


def _trace(rollout: Rollout) -> str:
    tools = " → ".join(p.tool_name for m in rollout.messages for p in m.tool_parts) or "no tool calls"
    evaluation = rollout.evaluation
    verdict = "passed" if evaluation and evaluation.passed else "failed"
    why = f" ({'; '.join(evaluation.feedback[:2])})" if evaluation and evaluation.feedback else ""
    return f"{verdict}: {tools}{why}"


def _passed(rollouts: list[Rollout]) -> dict[str, bool]:
    return {r.case.name: bool(r.evaluation and r.evaluation.passed) for r in rollouts}


def compare(before: list[Rollout], after: list[Rollout]) -> dict[str, Any]:
    was, now = _passed(before), _passed(after)
    traces = {r.case.name: _trace(r) for r in after}
    earlier = {r.case.name: _trace(r) for r in before}
    gained = sorted(n for n in now if now[n] and not was.get(n, False))
    lost = sorted(n for n in now if was.get(n, False) and not now[n])
    return {
        "before": sum(was.values()),
        "after": sum(now.values()),
        "cases": len(now),
        "gained": gained,
        "lost": lost,
        "flipped": {n: {"before": earlier.get(n, ""), "after": traces[n]} for n in [*gained, *lost]},
    }


def validation_line(result: dict[str, Any]) -> str:
    """``validation 9/12 → 11/12, flips +3 −1``."""
    n = result["cases"]
    return (
        f"validation {result['before']}/{n} → {result['after']}/{n}, "
        f"flips +{len(result['gained'])} −{len(result['lost'])}"
    )


class ValidationGate:
    """Runs a plan on held-out cases in an overlay; the verdict is written into the plan."""

    def __init__(self, cases: list[Case], executor: RolloutExecutor) -> None:
        self.cases = cases
        self.executor = executor

    async def _run(self, policy_set: ExperienceSet, label: str) -> list[Rollout]:
        return await self.executor.execute(list(self.cases), policy_set, ExecutionContext(label))

    async def assess(self, plan: PolicyUpdatePlan, policy_set: ExperienceSet) -> dict[str, Any]:
        if not self.cases or not plan.items:
            return {}
        before = await self._run(policy_set, "validation-before")
        result = compare(before, await self._run(overlay(policy_set, plan.items), "validation-after"))
        plan.metadata["validation"] = result
        for index, item in enumerate(plan.items):
            alone = await self._run(overlay(policy_set, [item]), f"validation-item-{index}")
            item.metadata["validation"] = compare(before, alone)
        return result


# --- evidence and leakage ----------------------------------------------------------------------------


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


def mark_evidence(plan: PolicyUpdatePlan, analyses: list[RolloutAnalysis]) -> None:
    """Per item: the batch's trajectories that support it, and the passing ones of the same intent
    (by the item's evidence) that the change might break."""
    by_uri: dict[str, RolloutAnalysis] = {}
    for analysis in analyses:
        for trajectory in analysis.trajectories:
            by_uri[trajectory.uri] = analysis
    for item in plan.items:
        supporting = [u for u in item.evidence_trajectory_uris if u in by_uri]
        intents = {by_uri[u].rollout.case.task_signature for u in supporting}
        counter = sorted(
            t.uri
            for a in analyses
            if a.evaluation.passed and a.rollout.case.task_signature in intents
            for t in a.trajectories
            if t.uri not in supporting
        )
        item.metadata["evidence"] = supporting
        item.metadata["counter_evidence"] = counter
