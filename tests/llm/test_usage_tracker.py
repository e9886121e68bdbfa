"""UsageTracker: sums per stage, cost from prices, cached calls counted but not charged."""

from __future__ import annotations

import pytest

from ovtui.llm.usage import CallUsage, UsageTracker


def test_sums_per_stage_and_total() -> None:
    tracker = UsageTracker(prompt_price_per_mtok=1.0, completion_price_per_mtok=4.0)
    cost = tracker.cost_of(1_000_000, 250_000)
    assert cost == pytest.approx(2.0)
    tracker.record(CallUsage("extract", "m", 1_000_000, 250_000, cost), 0.5)
    tracker.record(CallUsage("extract", "m", 10, 5, 0.0, cached=True), 0.0)
    tracker.record(CallUsage("merge", "m", 100, 50, tracker.cost_of(100, 50)), 0.25)
    extract = tracker.stage("extract")
    assert (extract.calls, extract.cached_calls, extract.prompt_tokens, extract.cost) == (
        2,
        1,
        1_000_000,
        2.0,
    )
    assert tracker.stage("nothing").calls == 0
    total = tracker.total
    assert (total.calls, total.total_tokens, total.latency_s) == (3, 1_250_150, 0.75)
    snapshot = tracker.snapshot()
    assert list(snapshot) == ["extract", "merge", "total"]
    assert snapshot["merge"] == {
        "calls": 1,
        "cached_calls": 0,
        "prompt_tokens": 100,
        "completion_tokens": 50,
        "cost": pytest.approx(0.0003),
        "latency_s": 0.25,
        "total_tokens": 150,
    }
