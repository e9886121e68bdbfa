"""Where a served memory is recorded: the one seam every retriever calls (the facade's find,
search and read for a session, MCP, ovtui's own agents), so the use ledger sees every use once.

A use is (memory URI, consumer: the session or the rollout it was served to, via: how). Until the
ledger records consumers, a use is counted in the hotness log (what hotness is derived from).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ovtui.memory.hotness import HotnessLog

UseVia = Literal["find", "search", "read", "mcp", "agent"]


class UseRecorder(Protocol):
    def record_uses(self, consumer: str, uris: Sequence[str], via: UseVia) -> None: ...


@dataclass(frozen=True)
class HotnessUses:
    """Uses counted in the hotness log (which keeps neither the consumer nor the way)."""

    log: HotnessLog

    def record_uses(self, consumer: str, uris: Sequence[str], via: UseVia) -> None:
        self.log.record_use(uris)
