"""A person's (or a review policy's) decision on one plan item, as records keep it: in a pending
plan, in ``ApplyOptions`` and in the ``review`` of a memory_diff.json.

Apart from the domain models so that reading history records does not load them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field


class Approval(BaseModel):
    """One person's approval of one plan item: which hunks it covers and, when the workspace asks
    for signatures (``[review] signers``), the reviewer's SSH signature over what it approves
    (``ovtui.core.reviewers.statement``). A person's later approval of the item replaces it."""

    model_config = ConfigDict(extra="allow")

    reviewer: str  # normalised (``ovtui.core.reviewers.reviewer_name``)
    hunks: list[int] | None = None  # the content hunks it covers (from 1); None: the whole item
    at: str = ""  # when, ISO 8601 (signed with the rest)
    digest: str = ""  # sha256 of the item as proposed (``item_digest``); signed with the rest
    signature: str | None = None  # an armored SSHSIG (``ssh-keygen -Y sign`` format)
    key: str | None = None  # the signing key's fingerprint, ``SHA256:…``

    def covers(self, hunk: int) -> bool:
        return self.hunks is None or hunk in self.hunks


class ReviewDecision(BaseModel):
    """One item's decision as a review records it (in a memory_diff's ``review``)."""

    # Records written by OpenViking (or a newer ovtui) may carry keys we do not know: keep them.
    model_config = ConfigDict(extra="allow")

    item: int
    decision: str
    note: str = ""
    reviewer: str = ""  # who decided (a person's name, or ``policy:<spec>`` for an automatic decision)
    approvals: list[str] = Field(default_factory=list)  # the reviewers who approved it, in order
    # What the learner proposed, when a reviewer's edit replaced it (the applied text is the
    # record's operation): the proposed → approved difference, kept as the reviewer's correction.
    proposed: str | None = None
    hunks: list[int] | None = None  # the content hunks approved (from 1); None: the whole item
    # Per hunk ("1", "2", …; "item" for a change without hunks, a delete) who approved it.
    approved_by: dict[str, list[str]] | None = None
    signoffs: list[Approval] = Field(default_factory=list)  # each approval as given (signed or not)
    content_sha256: str | None = None  # the item as proposed, as its approvals' ``digest`` names it

    @property
    def decided_by(self) -> str:
        """Who decided, as records show it: every approver of an approval, else the reviewer."""
        if self.decision == "approved" and self.approvals:
            return ", ".join(self.approvals)
        return self.reviewer


@dataclass(frozen=True)
class PastRejection:
    """A change a reviewer turned down, as a learner is shown it: a rejected item (``note`` is the
    reviewer's reason), or the lines a reviewer's edit removed from a proposal (``edited``).

    ``lines`` are what the change would have added to the file (the removed lines, for an edit);
    ``after`` is the whole text the item proposed (None for a delete); ``cases`` are the cases of
    the evidence it came from: the same change learned again from only these cases is not new
    evidence."""

    memory_type: str
    target_name: str
    kind: str
    lines: tuple[str, ...]
    after: str | None
    note: str
    reviewer: str
    cases: frozenset[str]
    plan_id: str
    edited: bool = False

    def is_old_evidence(self, cases: Iterable[str]) -> bool:
        """Whether evidence from ``cases`` is what this rejection already saw (nothing new)."""
        return set(cases) <= self.cases


class RejectionSource(Protocol):
    """Where a learner looks up what reviewers turned down (``ovtui.train.review.feedback``)."""

    def rejections(self, memory_type: str, target_name: str) -> list[PastRejection]:
        """The rejections of changes to this target, newest first."""
        ...
