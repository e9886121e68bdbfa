"""A person's (or a review policy's) decision on one plan item, as records keep it: in a pending
plan, in ``ApplyOptions`` and in the ``review`` of a memory_diff.json.

Apart from the domain models so that reading history records does not load them.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ReviewDecision(BaseModel):
    """One item's decision as a review records it (in a memory_diff's ``review``)."""

    # Records written by OpenViking (or a newer ovtui) may carry keys we do not know: keep them.
    model_config = ConfigDict(extra="allow")

    item: int
    decision: str
    note: str = ""
    reviewer: str = ""  # who decided (a person's name, or ``policy:<spec>`` for an automatic decision)
    approvals: list[str] = Field(default_factory=list)  # the reviewers who approved it, in order

    @property
    def decided_by(self) -> str:
        """Who decided, as records show it: every approver of an approval, else the reviewer."""
        if self.decision == "approved" and self.approvals:
            return ", ".join(self.approvals)
        return self.reviewer
