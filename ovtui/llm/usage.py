"""Token usage and cost, per call and aggregated per pipeline stage."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class CallUsage:
    """One model call as the endpoint reported it. A cached call cost nothing this time."""

    stage: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    cached: bool = False
    attempts: int = 1

    def to_event(self) -> dict[str, object]:
        return asdict(self)


# The engine passes this to put each call into the run's events.jsonl.
OnCall = Callable[[str, CallUsage, float], None]


@dataclass
class StageUsage:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    latency_s: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, usage: CallUsage, latency: float) -> None:
        self.calls += 1
        self.latency_s += latency
        if usage.cached:
            # Tokens of a replayed answer were paid for in the run that cached it.
            self.cached_calls += 1
            return
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        self.cost += usage.cost

    def to_dict(self) -> dict[str, float | int]:
        return {**asdict(self), "total_tokens": self.total_tokens}


class UsageTracker:
    """Thread-safe sums per stage; ``cost_of`` prices a call from the configured rates."""

    def __init__(self, prompt_price_per_mtok: float = 0.0, completion_price_per_mtok: float = 0.0) -> None:
        self.prompt_price_per_mtok = prompt_price_per_mtok
        self.completion_price_per_mtok = completion_price_per_mtok
        self._stages: dict[str, StageUsage] = {}
        self._lock = threading.Lock()

    def cost_of(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (
            prompt_tokens * self.prompt_price_per_mtok + completion_tokens * self.completion_price_per_mtok
        ) / 1_000_000

    def record(self, usage: CallUsage, latency: float) -> None:
        with self._lock:
            self._stages.setdefault(usage.stage, StageUsage()).add(usage, latency)

    def stage(self, name: str) -> StageUsage:
        with self._lock:
            found = self._stages.get(name)
            return StageUsage(**asdict(found)) if found else StageUsage()

    def stages(self) -> dict[str, StageUsage]:
        with self._lock:
            return {name: StageUsage(**asdict(s)) for name, s in sorted(self._stages.items())}

    @property
    def total(self) -> StageUsage:
        total = StageUsage()
        for s in self.stages().values():
            total.calls += s.calls
            total.cached_calls += s.cached_calls
            total.prompt_tokens += s.prompt_tokens
            total.completion_tokens += s.completion_tokens
            total.cost += s.cost
            total.latency_s += s.latency_s
        return total

    def snapshot(self) -> dict[str, dict[str, float | int]]:
        """JSON-ready: ``{stage: {...}, "total": {...}}`` for reports and the app."""
        data = {name: s.to_dict() for name, s in self.stages().items()}
        data["total"] = self.total.to_dict()
        return data
