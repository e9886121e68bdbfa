"""The grammar of a review policy (``[review] policy``, ``train --approve``), parsed in one place.

``all`` approves every item, ``none`` rejects every item, ``ask`` parks the plan for a person,
``gate`` approves when validation gains by the paired rule (Δ > k·SE), and ``confidence>=X`` (X from 0 to 1)
approves the items whose confidence is at least X. The configuration checks a policy with this
parser and the review decides with what it returns, so both accept exactly the same words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ReviewPolicyKind = Literal["all", "none", "ask", "gate", "confidence"]

CONFIDENCE_PREFIX = "confidence>="
NAMED_POLICIES: tuple[ReviewPolicyKind, ...] = ("all", "none", "ask", "gate")


@dataclass(frozen=True, slots=True)
class ReviewPolicySpec:
    kind: ReviewPolicyKind
    threshold: float | None = None  # for ``confidence``: the least confidence approved


def parse_review_policy(spec: str) -> ReviewPolicySpec:
    """The policy ``spec`` names; ValueError with one line saying what is wrong."""
    text = spec.strip()
    for kind in NAMED_POLICIES:
        if text == kind:
            return ReviewPolicySpec(kind)
    if not text.startswith(CONFIDENCE_PREFIX):
        raise ValueError(f"unknown review policy {spec!r}: use all, none, ask, gate or confidence>=X")
    number = text[len(CONFIDENCE_PREFIX) :]
    try:
        threshold = float(number)
    except ValueError:
        raise ValueError(
            f"review policy {spec!r}: confidence>=X needs a number X from 0 to 1 ({number!r} is not a number)"
        ) from None
    if not 0.0 <= threshold <= 1.0:  # NaN fails both
        raise ValueError(f"review policy {spec!r}: confidence>=X needs a number X from 0 to 1")
    return ReviewPolicySpec("confidence", threshold)
