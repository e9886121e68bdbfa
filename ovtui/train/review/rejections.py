"""Rejections that hold for the rule, not the case.

A person's rejection with a reason (``PastRejection``, read back from the settled plans beside the
pending ones, whichever backend planned them) turns down what the change says: its rules — a lesson compared
by kind, tools, condition and detail as the offline learner words it, any other line by its
normalised text (``line_key``) — not the cases that happened to produce it. A later plan item that
adds one of those rules again, from any case, is:

- held back (left out of its plan, named in ``held_back`` with who rejected it and why) unless its
  evidence is stronger: more distinct cases than the rejected item had, not all among them;
- else kept, marked ``previously_rejected`` (reviewer, reason, plan, both evidence counts), and
  never approved by a review policy: a person decides.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ovtui.core.decisions import PastRejection, RejectionSource
from ovtui.core.domain import PolicyPlanItem
from ovtui.plugins.wording.lessons import parse_lesson
from ovtui.plugins.wording.sections import line_key

PREVIOUSLY_REJECTED = "previously_rejected"  # the plan item's metadata key


def _rule_key(line: str) -> tuple[Any, ...]:
    lesson = parse_lesson(line)
    if lesson is not None:
        return ("lesson", lesson.kind, lesson.tools, lesson.facts, lesson.detail)
    return ("line", line_key(line))


def _keys(lines: Iterable[str]) -> set[tuple[Any, ...]]:
    return {_rule_key(line) for line in lines if line.strip() and not line.lstrip().startswith("#")}


def _rules(rejection: PastRejection) -> set[tuple[Any, ...]]:
    """What a rejection turned down: its lessons when it states any (the Situation examples around
    them differ from case to case), else every line it would have added."""
    keys = _keys(rejection.lines)
    lessons = {k for k in keys if k[0] == "lesson"}
    return lessons or keys


def added_lines(item: PolicyPlanItem) -> list[str]:
    had = {line_key(line) for line in (item.before_content or "").splitlines()}
    return [line for line in (item.after_content or "").splitlines() if line_key(line) not in had]


def matching_rejection(item: PolicyPlanItem, feedback: RejectionSource | None) -> PastRejection | None:
    """The newest person's rejection with a reason (not an edit) of a rule this item brings back;
    one without a reason (a bulk "reject the rest") keeps holding only for the cases it saw."""
    if feedback is None:
        return None
    added = _keys(added_lines(item)) if item.kind == "upsert" else set()
    for rejection in feedback.rejections(item.memory_type, item.target_name):
        if rejection.edited or not rejection.note.strip():
            continue  # a correction, or a rejection without a reason: it holds for its own cases only
        if rejection.kind == "delete" and item.kind == "delete":
            return rejection
        if rejection.kind == item.kind and added & _rules(rejection):
            return rejection
    return None


def stronger(cases: set[str], rejection: PastRejection) -> bool:
    """More distinct evidence cases than the rejected item had, not all of them among its cases."""
    return len(cases) > len(rejection.cases) and not cases <= rejection.cases


def rejection_line(rejection: PastRejection) -> str:
    reason = rejection.note or "no reason given"
    return f"previously rejected by {rejection.reviewer or 'a reviewer'}: {reason}"


def mark(item: PolicyPlanItem, rejection: PastRejection, cases: set[str]) -> None:
    """Mark an item that comes back with stronger evidence (shown by Review, kept in the JSON)."""
    item.metadata[PREVIOUSLY_REJECTED] = {
        "line": rejection_line(rejection),
        "reviewer": rejection.reviewer,
        "reason": rejection.note,
        "plan_id": rejection.plan_id,
        "rejected_cases": sorted(rejection.cases),
        "evidence_cases": sorted(cases),
    }


def held_back_line(item: PolicyPlanItem, rejection: PastRejection, cases: set[str]) -> str:
    return (
        f"{item.target_name}: {rejection_line(rejection)} (plan {rejection.plan_id}, "
        f"{len(rejection.cases)} case(s); again from {len(cases)}: {', '.join(sorted(cases))}: "
        "not stronger evidence)"
    )


def marked_line(item: PolicyPlanItem) -> str | None:
    """The mark of an item that came back, in words, with its new evidence (None: unmarked)."""
    mark_ = item.metadata.get(PREVIOUSLY_REJECTED)
    if not isinstance(mark_, dict):
        return None
    before, now = mark_.get("rejected_cases") or [], mark_.get("evidence_cases") or []
    return (
        f"{mark_.get('line', 'previously rejected')} (plan {mark_.get('plan_id')}, {len(before)} case(s); "
        f"back with {len(now)}: {', '.join(map(str, now))})"
    )
