"""Hotness: the score's shape, the use log, and retrieval mixing it in (weight 0 leaves it lexical)."""

from __future__ import annotations

import json
import logging
import math
import multiprocessing
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from plan_support import killed_copy, until_killed

from ovtui.core.domain import Experience, ExperienceSet, PolicyStatus
from ovtui.core.errors import OvtuiError
from ovtui.memory import hotness
from ovtui.memory.hotness import DAY_S, HotnessLog, HotnessMix, Usage, blend, hotness_score
from ovtui.storage import fsio
from ovtui.storage.paths import WorkspacePaths
from ovtui.train.components.rollout_executor import relevant_experiences

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


def test_compaction_keeps_counts_and_last_uses_and_bounds_the_log(tmp_path: Path) -> None:
    log = HotnessLog(WorkspacePaths(tmp_path), compact_at=400)
    for n in range(30):
        log.record([f"u{n % 4}", "hot"], at=NOW + n)
        assert log.path.stat().st_size < 400 + 100  # folded once an append passes the size
    before = log.usage()
    assert before["hot"] == Usage(30, NOW + 29) and before["u1"] == Usage(8, NOW + 29)
    log.compact()
    assert log.usage() == before
    assert log.summary_path.is_file() and log.path.read_text().count("\n") == 1  # just its name


def test_compaction_drops_uses_of_memories_that_are_gone(tmp_path: Path) -> None:
    paths = WorkspacePaths(tmp_path)
    kept, gone = _experience("kept").uri, _experience("gone").uri
    paths.path_for(kept).parent.mkdir(parents=True)
    paths.path_for(kept).write_text("x", encoding="utf-8")
    log = HotnessLog(paths)
    log.record([kept, gone, "not-a-uri"], at=NOW)
    log.compact()
    assert log.usage() == {kept: Usage(1, NOW), "not-a-uri": Usage(1, NOW)}


def test_an_oversized_log_or_summary_is_named_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = HotnessLog(WorkspacePaths(tmp_path))
    log.record(["u1"] * 20, at=NOW)
    with pytest.raises(OvtuiError, match=r"\.ovtui/hotness\.jsonl is \d+ bytes"):
        HotnessLog(log.paths, read_limit=100).usage()
    log.compact()
    log.summary_path.write_text(json.dumps({"log": "x", "offset": 0, "uses": {"u": [1, NOW]}}) + " " * 200)
    monkeypatch.setattr(hotness, "MAX_HOTNESS_SUMMARY_BYTES", 100)
    with pytest.raises(OvtuiError, match=r"\.ovtui/hotness\.json is \d+ bytes"):
        log.usage()


APPENDS = 150


def _append(root: str, barrier: Any, tag: str) -> None:
    log = HotnessLog(WorkspacePaths(Path(root)), compact_at=2_000)  # appenders compact too
    barrier.wait()
    for n in range(APPENDS):
        log.record([tag, "shared"], at=NOW + n)


def _compact_repeatedly(root: str, barrier: Any) -> None:
    log = HotnessLog(WorkspacePaths(Path(root)))
    barrier.wait()
    for _ in range(APPENDS):
        log.compact()


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_processes_appending_while_another_compacts_lose_no_use(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(3)
    processes = [
        context.Process(target=_append, args=(str(tmp_path), barrier, "a")),
        context.Process(target=_append, args=(str(tmp_path), barrier, "b")),
        context.Process(target=_compact_repeatedly, args=(str(tmp_path), barrier)),
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
        assert process.exitcode == 0
    usage = HotnessLog(WorkspacePaths(tmp_path)).usage()
    last = NOW + APPENDS - 1
    assert usage == {"a": Usage(APPENDS, last), "b": Usage(APPENDS, last), "shared": Usage(2 * APPENDS, last)}


def _compact_child(root: str, crash_after: int) -> None:
    until_killed(root, crash_after, lambda at: HotnessLog(WorkspacePaths(Path(at))).compact())


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork are POSIX")
def test_sigkill_at_every_step_of_a_compaction_loses_and_doubles_no_use(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    log = HotnessLog(WorkspacePaths(template))
    log.record(["u1", "u2"], at=NOW)
    log.compact()  # a summary that folded an earlier log
    log.record(["u1"], at=NOW + 5)
    expected = log.usage()
    assert expected == {"u1": Usage(2, NOW + 5), "u2": Usage(1, NOW)}
    counted = HotnessLog(WorkspacePaths(shutil.copytree(template, tmp_path / "count")))
    fsio.set_crash_after(10**9)  # count the steps of one compaction without crashing
    try:
        counted.compact()
        steps = fsio.steps_taken()
    finally:
        fsio.set_crash_after(None)
    assert steps >= 4  # the summary written (temp, rename), then the log replaced
    for crash_after in range(1, steps + 1):
        root = tmp_path / f"run{crash_after}"
        killed_copy(template, root, _compact_child, crash_after)
        after = HotnessLog(WorkspacePaths(root))
        assert after.usage() == expected, crash_after
        after.record(["u2"], at=NOW + 9)  # and the next append and compaction count on from there
        after.compact()
        assert after.usage() == {"u1": Usage(2, NOW + 5), "u2": Usage(2, NOW + 9)}, crash_after
        shutil.rmtree(root)


def test_a_reader_that_opened_the_log_before_two_compactions_counts_each_use_once(tmp_path: Path) -> None:
    log = HotnessLog(WorkspacePaths(tmp_path))
    log.record(["u1"], at=NOW)
    handle, generation = log._open_log(limit=None)  # usage() has opened the log, then is slow
    log.record(["u1"], at=NOW + 1)
    log.compact()
    log.record(["u1"], at=NOW + 2)
    log.compact()
    summary = log._read_summary()
    log._fold_log(summary, handle, generation)
    assert summary.uses == {"u1": [3, NOW + 2]}


def test_an_old_unnumbered_log_over_the_read_limit_is_folded_at_the_next_use(tmp_path: Path) -> None:
    log = HotnessLog(WorkspacePaths(tmp_path))
    log.path.parent.mkdir()
    log.path.write_text("".join(json.dumps({"uri": "old", "at": NOW + n}) + "\n" for n in range(50)))
    assert log.usage() == {"old": Usage(50, NOW + 49)}
    small = HotnessLog(log.paths, compact_at=500, read_limit=1_000)  # as in bounds.py, scaled down
    with pytest.raises(OvtuiError, match="folded into the summary at the next recorded use"):
        small.usage()
    small.record(["new"], at=NOW + 60)  # past the compaction size: folded whatever its size
    assert small.usage() == {"old": Usage(50, NOW + 49), "new": Usage(1, NOW + 60)}


def test_a_broken_summary_leaves_retrieval_and_the_agent_s_work_going(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = HotnessLog(WorkspacePaths(tmp_path))
    log.record(["u1"], at=NOW)
    log.compact()
    log.summary_path.write_text("{not json", encoding="utf-8")
    with pytest.raises(OvtuiError, match=r"hotness\.json"):
        log.usage()  # what `usage` reads is named exactly
    with caplog.at_level(logging.WARNING, logger="ovtui.memory.hotness"):
        assert log.scores(["u1", "u2"], half_life_days=7, now=NOW) == [0.0, 0.0]
        log.record_use(["u1"])  # a use that cannot be folded in is logged, not raised
    assert "hotness left out of retrieval" in caplog.text and "hotness.json" in caplog.text
