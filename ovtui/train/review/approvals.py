"""Approvals count per hunk and per person.

An approval names the hunks it covers (``ovtui.memory.hunks``; a change without hunks, a delete, is
one unit, ``item``). A hunk is taken only when as many different people as its kind needs approved
that hunk: with ``[review] second_approver_for = ["rewrite"]`` a hunk that removes or changes a line
needs two, a hunk that only adds lines one. People are counted by their signing key when approvals
are signed (two names, one key: one person), else by their normalised name. An item with a hunk
that some but not enough people approved waits: applying it refuses and says which hunk lacks whom.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ovtui.core.config import ChangeKind
from ovtui.core.decisions import Approval
from ovtui.core.domain import PolicyPlanItem
from ovtui.memory.hunks import hunks

WHOLE = "item"  # the one unit of a change without hunks


def unit_kinds(item: PolicyPlanItem) -> dict[str, ChangeKind]:
    """Each unit an approval can cover ("1", "2", … or ``item``) and what kind of change it is."""
    if item.kind == "delete":
        return {WHOLE: "delete"}
    if item.before_content is None:
        numbered = hunks(None, item.after_content or "")
        return {str(h.number): "new" for h in numbered} or {WHOLE: "new"}
    kept = {line.strip() for line in (item.after_content or "").splitlines()}
    kinds: dict[str, ChangeKind] = {}
    for hunk in hunks(item.before_content, item.after_content or ""):
        removed = [line for line in hunk.removed if line.strip() and line.strip() not in kept]
        kinds[str(hunk.number)] = "rewrite" if removed else "update"
    return kinds or {WHOLE: "update"}


def identity(approval: Approval) -> str:
    """Who an approval counts as: its signing key, else its reviewer's name."""
    return approval.key or approval.reviewer


def _covers(approval: Approval, unit: str) -> bool:
    return unit == WHOLE or approval.covers(int(unit))


@dataclass(frozen=True)
class Tally:
    """Per unit of an item: the approvals that cover it and how many different people it needs."""

    kinds: dict[str, ChangeKind]
    needed: dict[str, int]
    approvers: dict[str, list[Approval]]

    def count(self, unit: str) -> int:
        """How many people approved ``unit``; a review policy is never one of two."""
        people = [
            a for a in self.approvers[unit] if self.needed[unit] < 2 or not a.reviewer.startswith("policy:")
        ]
        return len({identity(a) for a in people})

    @property
    def taken(self) -> list[str]:
        return [u for u in self.kinds if self.count(u) >= self.needed[u] and self.count(u) > 0]

    @property
    def short(self) -> list[str]:
        return [u for u in self.kinds if 0 < self.count(u) < self.needed[u]]

    @property
    def hunks(self) -> list[int] | None:
        """The hunks to apply (None: every unit, the whole item)."""
        taken = self.taken
        if len(taken) == len(self.kinds):
            return None
        return [int(u) for u in taken]

    @property
    def approved(self) -> bool:
        """Something is taken and no unit waits for another person."""
        return bool(self.taken) and not self.short

    def approved_by(self) -> dict[str, list[str]]:
        """Per unit with an approval, who approved it (the record's ``approved_by``)."""
        return {
            unit: list(dict.fromkeys(a.reviewer for a in approvals))
            for unit, approvals in self.approvers.items()
            if approvals
        }

    def line(self) -> str:
        """``1 of 2 approvals (ana)`` for an item a unit of which needs two people, per unit when
        the units differ (``hunk 2 (rewrite): 1 of 2 approvals (bob)``); else ``""``."""
        two = [u for u in self.kinds if self.needed[u] > 1]
        if not two:
            return ""
        parts = dict.fromkeys(self._unit_line(u) for u in (self.short or two))
        if len(parts) == 1 and (len(self.kinds) == 1 or not self.short):
            return self._count_text(two[0])
        return "; ".join(parts)

    def _unit_line(self, unit: str) -> str:
        if unit == WHOLE or len(self.kinds) == 1:
            return self._count_text(unit)
        return f"hunk {unit} ({self.kinds[unit]}): {self._count_text(unit)}"

    def _count_text(self, unit: str) -> str:
        approvals = self.approvers[unit]
        names = list(dict.fromkeys(a.reviewer for a in approvals))
        got = self.count(unit)
        shown = f" ({', '.join(names)}{': one key' if len(names) > got else ''})" if names else ""
        return f"{min(got, self.needed[unit])} of {self.needed[unit]} approvals{shown}"


def tally(item: PolicyPlanItem, approvals: list[Approval], second_approver_for: Collection[str]) -> Tally:
    kinds = unit_kinds(item)
    needed = {u: 2 if kind in second_approver_for else 1 for u, kind in kinds.items()}
    approvers = {u: [a for a in approvals if _covers(a, u)] for u in kinds}
    return Tally(kinds, needed, approvers)
