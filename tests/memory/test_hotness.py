"""Hotness: the score's shape, the use log, and retrieval mixing it in (weight 0 leaves it lexical)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ovtui.components.rollout_executor import HotnessMix, relevant_experiences
from ovtui.domain import Experience, ExperienceSet, PolicyStatus
from ovtui.memory.hotness import DAY_S, HotnessLog, Usage, blend, hotness_score
from ovtui.workspace.paths import WorkspacePaths

NOW = 1_800_000_000.0


def test_score_grows_with_use_and_halves_per_half_life() -> None:
    assert hotness_score(None, now=NOW, half_life_days=7) == 0.0
    once = hotness_score(Usage(1, NOW), now=NOW, half_life_days=7)
    often = hotness_score(Usage(50, NOW), now=NOW, half_life_days=7)
    assert 0 < once < often < 1
    week_old = hotness_score(Usage(50, NOW - 7 * DAY_S), now=NOW, half_life_days=7)
    assert math.isclose(week_old, often / 2)


def test_blend_weight_zero_is_relevance() -> None:
    assert blend([3.0, 1.0], [0.0, 1.0], 0.0) == [3.0, 1.0]
    assert blend([3.0, 1.0], [0.0, 1.0], 0.5) == pytest.approx([0.5, 0.5 / 3 + 0.5])


def test_log_counts_uses_and_skips_a_torn_line(tmp_path: Path) -> None:
    paths = WorkspacePaths(tmp_path)
    log = HotnessLog(paths)
    log.record(["u1", "u2"], at=NOW - 10)
    log.record(["u1"], at=NOW)
    with log.path.open("a") as handle:
        handle.write('{"uri": "u3", "at"')  # a crash mid-append
    assert log.usage() == {"u1": Usage(2, NOW), "u2": Usage(1, NOW - 10)}


def _experience(name: str) -> Experience:
    return Experience(
        name=name,
        uri=f"viking://user/default/memories/experiences/{name}.md",
        version=1,
        status=PolicyStatus.PRODUCTION,
        content="## Approach\n- refund a damaged order after checking the order",
    )


def test_retrieval_mixes_hotness_in_and_records_uses(tmp_path: Path) -> None:
    policies = ExperienceSet(root_uri="x", policies=[_experience("refund_a"), _experience("refund_b")])
    log = HotnessLog(WorkspacePaths(tmp_path))
    query = "refund my damaged order"
    lexical = relevant_experiences(policies, query, 1, HotnessMix(log, weight=0.0))
    assert [e.name for e in lexical] == ["refund_a"]  # a tie: the first one
    log.record([_experience("refund_b").uri] * 5)
    hot = relevant_experiences(policies, query, 1, HotnessMix(log, weight=0.3))
    assert [e.name for e in hot] == ["refund_b"]  # equally relevant, but used more
    assert log.usage()[_experience("refund_a").uri].count == 1  # every retrieval is a use
    assert relevant_experiences(policies, "nothing matches zebra", 2, HotnessMix(log, weight=1.0)) == []
