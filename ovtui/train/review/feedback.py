"""What reviewers turned down, read back for the learners: rejections and corrections.

Every plan a person settled (applied, discarded, re-planned) stays in ``.ovtui/pending/settled/``
with its decisions, notes and edits, and with the evidence it was planned from. This reads them as
``PastRejection``s: an item a person rejected (the note is the reason), and the lines a person took
out of a proposal (an edit, hunks left unapproved: the proposed → approved difference, a
correction). Only settled plans teach: a decision in a plan that still waits may yet be undone, and
re-planning a waiting plan must not be steered by it (its decisions are kept by the re-plan). A
decision a review policy made is not a person's judgement and is left out.

A plan file is parsed once while it is unchanged (its size and modification time), so a training
run that asks for every batch reads only the plans decided since.
"""

from __future__ import annotations

import threading
from pathlib import Path

from ovtui.core.decisions import PastRejection
from ovtui.core.domain import PolicyPlanItem
from ovtui.storage.paths import SETTLED_FOLDER
from ovtui.train.review.plans import ItemDecision, PendingPlan, with_approved_hunks

POLICY_REVIEWER = "policy:"
AUTO_NOTE = "auto:"
EDITED_NOTE = "left out by the reviewer (an edit, or a hunk not approved)"


def _lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _added(before: str | None, after: str | None) -> tuple[str, ...]:
    had = set(_lines(before))
    return tuple(dict.fromkeys(line for line in _lines(after) if line not in had))


def _by_a_person(decision: ItemDecision) -> bool:
    return not decision.reviewer.startswith(POLICY_REVIEWER) and not decision.note.startswith(AUTO_NOTE)


def plan_rejections(pending: PendingPlan) -> list[PastRejection]:
    """The rejections and corrections one reviewed plan holds."""
    case_of = {
        t.uri: a.rollout.case.name for a in pending.evidence for t in a.trajectories
    }  # each evidence trajectory → the case it came from
    found: list[PastRejection] = []
    for item, decision in zip(pending.plan.items, pending.decisions, strict=True):
        cases = frozenset(case_of[uri] for uri in item.evidence_trajectory_uris if uri in case_of)
        if decision.decision == "rejected" and _by_a_person(decision):
            lines = _added(item.before_content, item.after_content)
            found.append(_rejection(pending, item, decision, lines, item.after_content, decision.note, cases))
        elif decision.decision == "approved" and item.kind == "upsert":
            # what the learner proposed, less what was applied (an edit, hunks left out): a correction
            edited = item.metadata.get("proposed_content")
            proposed = edited if isinstance(edited, str) else item.after_content
            removed = _added(with_approved_hunks(item, decision).after_content, proposed)
            if removed:
                note = decision.note or EDITED_NOTE
                found.append(_rejection(pending, item, decision, removed, proposed, note, cases, edited=True))
    return found


def _rejection(
    pending: PendingPlan,
    item: PolicyPlanItem,
    decision: ItemDecision,
    lines: tuple[str, ...],
    after: str | None,
    note: str,
    cases: frozenset[str],
    *,
    edited: bool = False,
) -> PastRejection:
    return PastRejection(
        memory_type=item.memory_type,
        target_name=item.target_name,
        kind=item.kind,
        lines=lines,
        after=None if item.kind == "delete" else after,
        note=note,
        reviewer=str(item.metadata.get("edited_by") or decision.reviewer) if edited else decision.reviewer,
        cases=cases,
        plan_id=pending.plan_id,
        edited=edited,
    )


class ReviewFeedback:
    """The ``RejectionSource`` of one workspace (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.folder = root / SETTLED_FOLDER
        self._parsed: dict[Path, tuple[tuple[int, int], str, list[PastRejection]]] = {}
        self._lock = threading.Lock()  # estimators ask from several threads at once

    def rejections(self, memory_type: str, target_name: str) -> list[PastRejection]:
        """The rejections of changes to this target, newest plan first."""
        return [r for r in self.every() if r.memory_type == memory_type and r.target_name == target_name]

    def every(self) -> list[PastRejection]:
        with self._lock:
            plans = [self._read(path) for path in sorted(self.folder.glob("*.json"))]
        ordered = sorted((p for p in plans if p is not None), key=lambda p: p[0], reverse=True)
        return [rejection for _, found in ordered for rejection in found]

    def _read(self, path: Path) -> tuple[str, list[PastRejection]] | None:
        try:
            stat = path.stat()
            key = (stat.st_size, stat.st_mtime_ns)
            cached = self._parsed.get(path)
            if cached is None or cached[0] != key:
                pending = PendingPlan.model_validate_json(path.read_text(encoding="utf-8"))
                cached = key, pending.created_at, plan_rejections(pending)
                self._parsed[path] = cached
        except (OSError, ValueError):
            return None  # not a plan (or unreadable): nothing to learn from it
        return cached[1], cached[2]
