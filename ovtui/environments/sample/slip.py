"""The sample agent's seeded slips: ``[sample] slip = 0.1`` makes it forget its experiences on a
tenth of its runs, as a model at temperature > 0 now and then ignores what its prompt says. With it
a newcomer sees, offline, what the A/A null, repeated trials and the verdict do with noise.

Each slip is decided by a hash of ``(seed, stage, epoch, case, trial)``, the trial being how many
times this run has run the case in that stage: a rerun of the same command slips in the same places,
and A run twice (``compare``'s A/A null, two stages) slips in different ones. The default, 0, is
the deterministic agent.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import ClassVar

from pydantic import Field

from ovtui.plugins import ExecutionContext, PluginConfig

COUNTED = 100_000  # (run, stage, case) trial counters kept; the oldest go first


class SampleConfig(PluginConfig):
    """``[sample]``: the sample agent's own settings."""

    TABLE: ClassVar[str] = "sample"

    # The chance that one run of a case ignores every experience (0: never; the agent is deterministic).
    slip: float = Field(0.0, ge=0, le=1)
    seed: int = Field(0, ge=0, le=2**31 - 1)


class Slips:
    """Whether the agent slips on a case now; counts each case's trials per run and stage."""

    def __init__(self, chance: float = 0.0, seed: int = 0) -> None:
        self.chance = chance
        self.seed = seed
        self._trials: OrderedDict[tuple[str, str, int, str], int] = OrderedDict()

    def slips(self, case: str, context: ExecutionContext) -> bool:
        if self.chance <= 0:
            return False
        key = (context.run_id or "", context.stage, context.epoch, case)
        trial = self._trials.get(key, 0)
        self._trials[key] = trial + 1
        self._trials.move_to_end(key)
        while len(self._trials) > COUNTED:
            self._trials.popitem(last=False)
        text = f"{self.seed}|{context.stage}|{context.epoch}|{case}|{trial}"
        draw = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") / 2**64
        return draw < self.chance
