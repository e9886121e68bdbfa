"""Repeated trials of every eval case (``[trainer] eval_trials``): the cases of a batch are run
``trials`` times each, so reports can give pass^k (the chance that k runs of a case all pass)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from ovtui.core.domain import Case
from ovtui.core.interfaces import CaseLoader


class RepeatedCases:
    def __init__(self, cases: CaseLoader, trials: int) -> None:
        if trials < 1:
            raise ValueError("trials must be at least 1")
        self.cases = cases
        self.trials = trials

    async def count(self) -> int:
        return await self.cases.count() * self.trials

    async def batches(self) -> AsyncIterator[list[Case]]:
        async for batch in self.cases.batches():
            yield [case for case in batch for _ in range(self.trials)]
