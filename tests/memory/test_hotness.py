"""Hotness: the score's shape, and retrieval mixing it in from the use ledger (weight 0 leaves it
lexical; a memory that matches nothing is never brought in by being hot)."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import pytest

from ovtui.core.domain import Experience, ExperienceSet, PolicyStatus
from ovtui.memory.experience_prompt import relevant_experiences
from ovtui.memory.hotness import DAY_S, HotnessMix, blend, hotness_score
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import Usage, Use
from ovtui.storage.paths import WorkspacePaths

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


def _experience(name: str) -> Experience:
    return Experience(
        name=name,
        uri=f"viking://user/default/memories/experiences/{name}.md",
        version=1,
        status=PolicyStatus.PRODUCTION,
        content="## Approach\n- refund a damaged order after checking the order",
    )


def test_retrieval_mixes_in_the_hotness_of_the_ledger_s_uses(tmp_path: Path) -> None:
    policies = ExperienceSet(root_uri="x", policies=[_experience("refund_a"), _experience("refund_b")])
    ledger = UseLedger(WorkspacePaths(tmp_path))
    query = "refund my damaged order"
    lexical = relevant_experiences(policies, query, 1, HotnessMix(ledger, weight=0.0))
    assert [e.name for e in lexical] == ["refund_a"]  # a tie: the first one
    ledger.record([Use(_experience("refund_b").uri, "session:s1")] * 5)
    hot = relevant_experiences(policies, query, 1, HotnessMix(ledger, weight=0.3))
    assert [e.name for e in hot] == ["refund_b"]  # equally relevant, but used more
    assert relevant_experiences(policies, "nothing matches zebra", 2, HotnessMix(ledger, weight=1.0)) == []


def test_scores_follow_the_uses_and_their_age(tmp_path: Path) -> None:
    ledger = UseLedger(WorkspacePaths(tmp_path))
    ledger.record([Use("u1", None)] * 3, at=NOW - 7 * DAY_S)
    ledger.record([Use("u2", None)] * 3, at=NOW)
    old, new, never = HotnessMix(ledger, half_life_days=7).scores(["u1", "u2", "u3"], now=NOW)
    assert never == 0.0 and math.isclose(old, new / 2)


def test_a_broken_ledger_leaves_retrieval_going(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ledger = UseLedger(WorkspacePaths(tmp_path))
    ledger.record([Use("u1", None)], at=NOW)
    ledger.compact()
    ledger.summary_path.write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="ovtui.memory.hotness"):
        assert HotnessMix(ledger).scores(["u1", "u2"], now=NOW) == [0.0, 0.0]
    assert "hotness left out of retrieval" in caplog.text and "ledger.json" in caplog.text
