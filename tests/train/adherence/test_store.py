"""The adherence record: a recording counts once by its key, what it keeps besides counts is
bounded, and a damaged file is one line naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ovtui.core.errors import OvtuiError
from ovtui.plugins.adherence import Directive
from ovtui.storage.paths import ADHERENCE_FILE, WorkspacePaths
from ovtui.train.adherence.store import MAX_VIOLATIONS, AdherenceStore, Observation

URI = "viking://user/default/memories/experiences/x.md"
NEVER = Directive("never", ("refund_payment",), (), "NEVER call refund_payment")


def use(n: int) -> Observation:
    return Observation(URI, "x", 1, f"case_{n}", n % 2 == 0, ((NEVER, "violated"),), f"rollout:{n}")


def test_counted_once_and_bounded(tmp_path: Path) -> None:
    store = AdherenceStore(WorkspacePaths(tmp_path))
    added = store.record_all([(f"rollout:{n}", [use(n)]) for n in range(8)])
    assert added == 8
    assert store.record_all([("rollout:3", [use(3)]), ("rollout:9", [use(9)])]) == 1  # 3 was recorded
    entry = store.read().experiences[URI]
    assert (entry.uses, entry.violated) == (9, 9)
    kept = entry.directives[0]
    assert kept.violated == 9 and len(kept.violations) == MAX_VIOLATIONS
    assert [v.case for v in kept.violations] == ["case_4", "case_5", "case_6", "case_7", "case_9"]
    assert entry.cases["case_9"] == [0, 0, 0, 1]  # violated, failed


def test_a_damaged_record_is_one_line(tmp_path: Path) -> None:
    (tmp_path / ".ovtui").mkdir()
    (tmp_path / ADHERENCE_FILE).write_text('{"experiences": 3}')
    with pytest.raises(OvtuiError, match=r"adherence.json: not an adherence record"):
        AdherenceStore(WorkspacePaths(tmp_path)).read()
