"""Hotness: how often and how recently a memory was used, as a score in [0, 1].

The uses are the use ledger's (``memory.ledger``: every memory served to a session or a rollout).
The score follows the seed's shape — frequency squashed by ``sigmoid(log1p(count))``, times an
exponential decay with the age of the last use and a configurable half-life — and is zero for a
memory never used. Retrieval mixes it in with a weight: ``(1 - w) · relevance + w · hotness`` over
relevances scaled to [0, 1]; ``w = 0`` leaves retrieval as it was.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ovtui.core.errors import OvtuiError
from ovtui.memory.ledger import UseLedger

DAY_S = 86_400.0

log = logging.getLogger(__name__)


class Used(Protocol):
    @property
    def count(self) -> int: ...

    @property
    def last_used(self) -> float: ...


def hotness_score(usage: Used | None, *, now: float, half_life_days: float) -> float:
    if usage is None:
        return 0.0
    return _score(usage.count, usage.last_used, now, half_life_days)


def _score(count: int, last_used: float, now: float, half_life_days: float) -> float:
    if count <= 0:
        return 0.0
    frequency = 1.0 / (1.0 + math.exp(-math.log1p(count)))
    age_days = max(0.0, now - last_used) / DAY_S
    return frequency * math.exp(-math.log(2) / half_life_days * age_days)


def blend(relevance: Sequence[float], hotness: Sequence[float], weight: float) -> list[float]:
    """Relevance (scaled by its maximum) and hotness mixed with ``weight`` in [0, 1]."""
    if weight <= 0:
        return list(relevance)
    top = max(relevance, default=0.0) or 1.0
    return [(1 - weight) * r / top + weight * h for r, h in zip(relevance, hotness, strict=True)]


@dataclass(frozen=True, slots=True)
class HotnessMix:
    """Hotness mixed into a ranking (``weight`` 0 leaves it lexical) and the ledger where the uses
    are recorded."""

    ledger: UseLedger
    weight: float = 0.0
    half_life_days: float = 7.0

    def scores(self, uris: Sequence[str], *, now: float | None = None) -> list[float]:
        """Hotness of each URI. A ledger ovtui cannot read scores nothing hot: hotness only orders
        what is relevant and must not stop retrieval; the problem is logged, naming the file."""
        try:
            uses = self.ledger.uses_of(uris)
        except OvtuiError as exc:
            log.warning("hotness left out of retrieval: %s", exc)
            return [0.0] * len(uris)
        moment = time.time() if now is None else now
        return [0.0 if u is None else _score(u[0], u[1], moment, self.half_life_days) for u in uses]

    def mixed(self, uris: Sequence[str], relevance: Sequence[float]) -> list[float]:
        """``relevance`` of the memories at ``uris`` mixed with their hotness. Heat orders related
        memories; it never makes an unrelated one (relevance 0) related."""
        if self.weight <= 0:
            return list(relevance)
        mixed = blend(relevance, self.scores(uris), self.weight)
        return [m if r > 0 else 0.0 for r, m in zip(relevance, mixed, strict=True)]
