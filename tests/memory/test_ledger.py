"""The use ledger: uses by consumers, outcomes linked to them, what each memory keeps (bounded), the
log folded into its summary (generations, exactly once under SIGKILL and concurrent processes), a
reader that folds only what was appended, and the hotness files of an older ovtui taken in once."""

from __future__ import annotations

import json
import logging
import multiprocessing
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_support import killed_copy, until_killed

from ovtui.core.domain import (
    EXECUTION_ERROR,
    Case,
    Rollout,
    RolloutAnalysis,
    Rubric,
    RubricEvaluation,
    Trajectory,
)
from ovtui.core.errors import OvtuiError
from ovtui.memory import ledger_state
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import (
    OUTCOMES,
    ROLLOUT_ID,
    LedgerState,
    Outcome,
    Record,
    Result,
    Usage,
    Use,
    rollout_outcomes,
)
from ovtui.storage import fsio
from ovtui.storage.paths import LEGACY_HOTNESS_LOG_FILE as LEGACY_LOG_FILE
from ovtui.storage.paths import LEGACY_HOTNESS_SUMMARY_FILE as LEGACY_SUMMARY_FILE
from ovtui.storage.paths import WorkspacePaths

NOW = 1_800_000_000.0
EXP = "viking://user/default/memories/experiences"


def ledger_at(root: Path, **limits: int) -> UseLedger:
    return UseLedger(WorkspacePaths(root), **limits)


def counts(ledger: UseLedger) -> dict[str, tuple[int, float]]:
    return {uri: (u.count, u.last_used) for uri, u in ledger.usage().items()}


def test_uses_count_and_a_cut_line_is_skipped_alone(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    ledger.record([Use("u1", "session:a"), Use("u2", "session:a")], at=NOW - 10)
    ledger.record([Use("u1", "session:b")], at=NOW)
    with ledger.path.open("a") as handle:
        handle.write('{"use": "u3", "at"')  # a crash mid-append
    assert counts(ledger) == {"u1": (2, NOW), "u2": (1, NOW - 10)}
    ledger.record([Use("u2", None)], at=NOW + 1)  # the next append starts a line of its own
    assert counts(ledger) == {"u1": (2, NOW), "u2": (2, NOW + 1)}
    assert ledger.usage()["u1"].sessions == 2


def test_an_outcome_credits_what_its_consumer_used_since_its_last_outcome(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    ledger.record([Use("u1", "session:s", "find", 3), Use("u2", "session:s", "read")], at=NOW)
    ledger.record([Use("u1", "session:other")], at=NOW)
    results = (Result("success", "viking://t/1.md"), Result("failure", "viking://t/2.md"))
    ledger.record([Outcome("session:s", results)], at=NOW + 5)
    ledger.record([Use("u2", "session:s")], at=NOW + 6)  # the session goes on after its commit
    ledger.record([Outcome("session:s", (Result("partial"),))], at=NOW + 9)
    usage = ledger.usage()
    assert usage["u1"].histogram() == {
        "success": 1,
        "failure": 1,
        "partial": 0,
        "unknown": 0,
        "unfinished": 0,
    }
    assert usage["u2"].outcomes == (1, 1, 1, 0, 0)  # both commits: it was used before each
    assert usage["u1"].sessions == 2 and usage["u2"].sessions == 1  # a session counts once
    assert usage["u1"].success_share == 0.5
    assert usage["u1"].of_version(3) == ledger_state.VersionUsage(1, (1, 1, 0, 0, 0))
    fed = ledger.fed("u2")
    assert [(f.outcome, f.trajectory) for f in fed] == [
        ("partial", None),
        ("failure", "viking://t/2.md"),
        ("success", "viking://t/1.md"),
    ]
    assert [f.at for f in fed] == [NOW + 9, NOW + 5, NOW + 5]


def test_a_commit_s_reads_count_once_and_a_commit_folded_again_counts_once(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    ledger.record([Use("u1", "session:s", "read")], at=NOW)  # read through the API first
    commit = Outcome("session:s", (Result("success"),), reads=(("u1", 2), ("u2", 2)), key="k1")
    ledger.record([commit], at=NOW + 1)
    ledger.record([commit], at=NOW + 2)  # the same conversation committed again
    usage = ledger.usage()
    assert usage["u1"].count == 1 and usage["u2"].count == 1  # the tool call reported the API read
    assert usage["u1"].outcomes[0] == usage["u2"].outcomes[0] == 1
    ledger.record([Outcome("session:s", (Result("failure"),), reads=(("u1", 2),), key="k2")], at=NOW + 3)
    assert ledger.usage()["u1"].count == 2  # a read in a later commit is a new use


def test_rollout_outcomes_come_from_trajectories_or_the_grade(tmp_path: Path) -> None:
    case = Case(name="c", task_signature="t", rubric=Rubric(name="r"))

    def rollout(rollout_id: str | None, **metadata: Any) -> Rollout:
        ids = {ROLLOUT_ID: rollout_id} if rollout_id else {}
        return Rollout(case=case, metadata={**ids, **metadata})

    analysed, passed, broken, unknown, anonymous = (
        rollout("r1"),
        rollout("r2"),
        rollout("r3", **{EXECUTION_ERROR: "down"}),
        rollout("r4"),
        rollout(None),
    )
    passed.evaluation = RubricEvaluation(passed=True, score=1.0)
    trajectory = Trajectory(name="t1", uri="viking://t/1.md", content="", outcome="partial")
    analysis = RolloutAnalysis(
        rollout=analysed, evaluation=RubricEvaluation(passed=False, score=0.5), trajectories=[trajectory]
    )
    found = rollout_outcomes([analysed, passed, broken, unknown, anonymous], [analysis])
    assert [(o.consumer, o.results, o.final) for o in found] == [
        ("rollout:r1", (Result("partial", "viking://t/1.md"),), True),
        ("rollout:r2", (Result("success"),), True),
        ("rollout:r3", (Result("unfinished"),), True),
        ("rollout:r4", (Result("unknown"),), True),
    ]
    ledger = ledger_at(tmp_path)
    ledger.record([Use("u1", "rollout:r1"), Use("u1", "rollout:r2")], at=NOW)
    ledger.record(found, at=NOW + 1)
    assert ledger.usage()["u1"].outcomes == (1, 0, 1, 0, 0)
    with ledger._state() as state:
        assert state.consumers == {}  # a graded rollout never comes back: it is forgotten


def test_what_a_memory_and_a_consumer_keep_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ledger_state, "LEDGER_FED_PER_MEMORY", 3)
    monkeypatch.setattr(ledger_state, "LEDGER_VERSIONS_PER_MEMORY", 2)
    monkeypatch.setattr(ledger_state, "LEDGER_CONSUMERS", 2)
    ledger = ledger_at(tmp_path)
    for n in range(5):
        ledger.record(
            [Use("u1", f"session:{n}", version=n), Outcome(f"session:{n}", (Result("success", f"t{n}"),))]
        )
    usage = ledger.usage()["u1"]
    assert usage.count == 5 and usage.sessions == 5 and usage.outcomes[0] == 5  # counts stay exact
    assert [v for v, _ in usage.versions] == [4, 3]  # the newest versions
    assert [f.trajectory for f in ledger.fed("u1")] == ["t4", "t3", "t2"]  # the newest results
    with ledger._state() as state:
        assert list(state.consumers) == ["session:3", "session:4"]  # the most recently active
    ledger.compact()
    with ledger._state() as state:
        assert len(state.results) == 3  # results no memory keeps are gone with the compaction
    ledger.record([Use("u1", "session:0")])  # forgotten, so counted as a new consumer
    assert ledger.usage()["u1"].sessions == 6


def test_compaction_keeps_every_record_and_bounds_the_log(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path, compact_at=600)
    for n in range(30):
        ledger.record([Use(f"u{n % 4}", f"session:{n % 3}"), Use("hot", None)], at=NOW + n)
        if n % 5 == 4:
            ledger.record([Outcome(f"session:{n % 3}", (Result("success", f"t{n}"),))], at=NOW + n)
        assert ledger.path.stat().st_size < 600 + 300  # folded once an append passes the size
    before = ledger.usage()
    assert (before["hot"].count, before["hot"].last_used) == (30, NOW + 29)
    assert (before["u1"].count, before["u1"].sessions) == (8, 3)
    fed = {uri: ledger.fed(uri) for uri in before}
    ledger.compact()
    assert ledger.usage() == before and {uri: ledger.fed(uri) for uri in before} == fed
    assert ledger.summary_path.is_file() and ledger.path.read_text().count("\n") == 1  # just its name


def test_compaction_drops_the_uses_of_memories_that_are_gone(tmp_path: Path) -> None:
    paths = WorkspacePaths(tmp_path)
    kept, gone = f"{EXP}/kept.md", f"{EXP}/gone.md"
    paths.path_for(kept).parent.mkdir(parents=True)
    paths.path_for(kept).write_text("x", encoding="utf-8")
    ledger = UseLedger(paths)
    ledger.record([Use(kept, "session:s"), Use(gone, "session:s"), Use("not-a-uri", None)], at=NOW)
    ledger.compact()
    assert counts(ledger) == {kept: (1, NOW), "not-a-uri": (1, NOW)}


def test_an_oversized_log_or_summary_is_named_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = ledger_at(tmp_path)
    ledger.record([Use("u1", None)] * 20, at=NOW)
    with pytest.raises(OvtuiError, match=r"\.ovtui/ledger\.jsonl is \d+ bytes"):
        ledger_at(tmp_path, read_limit=100).usage()
    ledger.compact()
    from ovtui.memory import ledger as ledger_module

    monkeypatch.setattr(ledger_module, "MAX_LEDGER_SUMMARY_BYTES", 100)
    with pytest.raises(OvtuiError, match=r"\.ovtui/ledger\.json is \d+ bytes"):
        ledger_at(tmp_path).usage()


def test_a_broken_summary_is_named_and_an_agent_s_use_is_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = ledger_at(tmp_path)
    ledger.record([Use("u1", None)], at=NOW)
    ledger.compact()
    ledger.summary_path.write_text(json.dumps({"format": 1, "log": "x"}), encoding="utf-8")
    with pytest.raises(OvtuiError, match=r"ledger\.json is not a use ledger summary .*move it aside"):
        ledger.usage()
    with caplog.at_level(logging.WARNING, logger="ovtui.memory.ledger"):
        # past the compaction size: a use that cannot be folded in is logged, not raised
        ledger_at(tmp_path, compact_at=10).try_record([Use("u1", None)])
    assert "memory use not recorded" in caplog.text and "ledger.json" in caplog.text


def test_a_reader_folds_only_what_was_appended_and_sees_another_process_s_compaction(tmp_path: Path) -> None:
    reader, writer = ledger_at(tmp_path), ledger_at(tmp_path, compact_at=400)
    writer.record([Use("u1", "session:s")], at=NOW)
    assert reader.usage()["u1"].count == 1
    seen = reader._seen
    writer.record([Use("u1", "session:s")], at=NOW + 1)
    assert reader.usage()["u1"].count == 2 and reader._seen is seen  # folded on, not read again
    for n in range(10):  # past the size: the writer compacts, the reader reads the new summary
        writer.record([Use("u1", "session:t"), Outcome("session:t", (Result("failure"),))], at=NOW + 2 + n)
    assert reader.usage() == ledger_at(tmp_path).usage()
    assert reader.usage()["u1"].count == 12 and reader.usage()["u1"].outcomes[1] == 10


APPENDS = 150


def _append(root: str, barrier: Any, tag: str) -> None:
    ledger = UseLedger(WorkspacePaths(Path(root)), compact_at=2_000)  # appenders compact too
    barrier.wait()
    for n in range(APPENDS):
        ledger.record([Use(tag, f"session:{tag}"), Use("shared", f"session:{tag}")], at=NOW + n)
        if n % 10 == 9:
            ledger.record([Outcome(f"session:{tag}", (Result("success"),))], at=NOW + n)


def _compact_repeatedly(root: str, barrier: Any) -> None:
    ledger = UseLedger(WorkspacePaths(Path(root)))
    barrier.wait()
    for _ in range(APPENDS):
        ledger.compact()
        ledger.usage()


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
def test_processes_appending_while_another_compacts_lose_no_record(tmp_path: Path) -> None:
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
    usage = ledger_at(tmp_path).usage()
    last = NOW + APPENDS - 1
    assert counts(ledger_at(tmp_path)) == {
        "a": (APPENDS, last),
        "b": (APPENDS, last),
        "shared": (2 * APPENDS, last),
    }
    assert usage["shared"].sessions == 2 and usage["shared"].outcomes[0] == 2 * APPENDS // 10
    assert usage["a"].outcomes[0] == APPENDS // 10


def _template(root: Path) -> dict[str, Usage]:
    ledger = ledger_at(root)
    ledger.record([Use("u1", "session:s", version=1), Use("u2", "session:s")], at=NOW)
    ledger.record([Outcome("session:s", (Result("success", "t1"),), key="k")], at=NOW + 1)
    ledger.compact()  # a summary that folded an earlier log
    ledger.record([Use("u1", "session:s", version=2)], at=NOW + 5)
    return ledger.usage()


def _compact_child(root: str, crash_after: int) -> None:
    until_killed(root, crash_after, lambda at: UseLedger(WorkspacePaths(Path(at))).compact())


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork are POSIX")
def test_sigkill_at_every_step_of_a_compaction_loses_and_doubles_no_record(tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    expected = _template(template)
    assert expected["u1"].count == 2 and expected["u1"].outcomes[0] == 1
    counted = ledger_at(shutil.copytree(template, tmp_path / "count"))
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
        after = ledger_at(root)
        assert after.usage() == expected, crash_after
        after.record([Outcome("session:s", (Result("failure", "t2"),))], at=NOW + 9)
        after.compact()  # the next append and compaction count on from there
        usage = after.usage()
        assert usage["u1"].outcomes == (1, 1, 0, 0, 0) and usage["u2"].outcomes == (1, 0, 0, 0, 0), (
            crash_after
        )
        assert [f.trajectory for f in after.fed("u1")] == ["t2", "t1"], crash_after
        shutil.rmtree(root)


def test_a_reader_that_opened_the_log_before_two_compactions_counts_each_record_once(tmp_path: Path) -> None:
    ledger = ledger_at(tmp_path)
    ledger.record([Use("u1", "session:s")], at=NOW)
    handle, generation = ledger._open_log(limit=None)  # a read has opened the log, then is slow
    ledger.record([Use("u1", "session:s")], at=NOW + 1)
    ledger.compact()
    ledger.record([Use("u1", "session:s")], at=NOW + 2)
    ledger.compact()
    state, _ = ledger._read_summary()
    ledger._fold_log(state, handle, generation)
    assert state.count_and_last("u1") == (3, NOW + 2)


# --- an older ovtui's hotness files ----------------------------------------------------------------


def _legacy(root: Path) -> None:
    """What an older ovtui left: a summary that folded generation 1 up to its first use, and the
    log of generation 1 with one use folded and one not."""
    state = root / ".ovtui"
    state.mkdir(exist_ok=True)
    header = json.dumps({"log": 1}) + "\n"
    first = json.dumps({"uri": "old", "at": NOW}) + "\n"
    (root / LEGACY_LOG_FILE).write_text(header + first + json.dumps({"uri": "old", "at": NOW + 1}) + "\n")
    summary = {"log": 1, "offset": len(header) + len(first), "uses": {"old": [5, NOW], "older": [2, NOW - 9]}}
    (root / LEGACY_SUMMARY_FILE).write_text(json.dumps(summary))


def test_an_older_ovtui_s_uses_are_counted_and_taken_in_once(tmp_path: Path) -> None:
    _legacy(tmp_path)
    ledger = ledger_at(tmp_path)
    expected = {"old": (6, NOW + 1), "older": (2, NOW - 9)}
    assert counts(ledger) == expected  # read before anything is migrated
    ledger.record([Use("new", "session:s")], at=NOW + 2)
    assert not (tmp_path / LEGACY_LOG_FILE).exists() and not (tmp_path / LEGACY_SUMMARY_FILE).exists()
    assert counts(ledger) == {**expected, "new": (1, NOW + 2)}
    assert counts(ledger_at(tmp_path)) == {**expected, "new": (1, NOW + 2)}


def _migrate_child(root: str, crash_after: int) -> None:
    until_killed(
        root, crash_after, lambda at: UseLedger(WorkspacePaths(Path(at))).record([Use("new", None)], at=NOW)
    )


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and fork are POSIX")
def test_sigkill_at_every_step_of_taking_the_hotness_files_in_loses_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    template = tmp_path / "template"
    template.mkdir()
    _legacy(template)
    counted = ledger_at(shutil.copytree(template, tmp_path / "count"))
    fsio.set_crash_after(10**9)
    try:
        counted.record([Use("new", None)], at=NOW)
        steps = fsio.steps_taken()
    finally:
        fsio.set_crash_after(None)
    for crash_after in range(1, steps + 1):
        root = tmp_path / f"run{crash_after}"
        killed_copy(template, root, _migrate_child, crash_after)
        after = ledger_at(root)
        found = counts(after)
        assert found.pop("new", None) in (None, (1, NOW)), crash_after  # that one use: at most once
        assert found == {"old": (6, NOW + 1), "older": (2, NOW - 9)}, crash_after
        after.record([Use("later", None)], at=NOW + 3)
        assert not (root / LEGACY_LOG_FILE).exists(), crash_after
        assert counts(after)["old"] == (6, NOW + 1), crash_after
        shutil.rmtree(root)


def test_an_old_unnumbered_log_over_the_read_limit_is_taken_in_at_the_next_use(tmp_path: Path) -> None:
    (tmp_path / ".ovtui").mkdir()
    lines = "".join(json.dumps({"uri": "old", "at": NOW + n}) + "\n" for n in range(50))
    (tmp_path / LEGACY_LOG_FILE).write_text(lines)
    assert counts(ledger_at(tmp_path)) == {"old": (50, NOW + 49)}
    small = ledger_at(tmp_path, compact_at=500, read_limit=1_000)  # as in bounds.py, scaled down
    with pytest.raises(OvtuiError, match="taken into the use ledger at the next recorded use"):
        small.usage()
    small.record([Use("new", None)], at=NOW + 60)  # taken in whatever its size
    assert counts(small) == {"old": (50, NOW + 49), "new": (1, NOW + 60)}


# --- properties -----------------------------------------------------------------------------------

URIS = st.sampled_from(["u1", "u2", "u3"])
CONSUMERS = st.sampled_from(["session:a", "session:b", "rollout:r", None])
USES = st.builds(
    Use, URIS, CONSUMERS, st.sampled_from(["find", "read", "agent"]), st.one_of(st.none(), st.integers(1, 6))
)
RESULTS = st.builds(Result, st.sampled_from(OUTCOMES), st.one_of(st.none(), st.sampled_from(["t1", "t2"])))
OUTCOME_RECORDS = st.builds(
    Outcome,
    st.sampled_from(["session:a", "session:b", "rollout:r"]),
    st.lists(RESULTS, max_size=3).map(tuple),
    st.lists(st.tuples(URIS, st.one_of(st.none(), st.integers(1, 6))), max_size=3).map(tuple),
    st.one_of(st.none(), st.sampled_from(["k1", "k2"])),
    st.booleans(),
)
STEPS = st.lists(
    st.one_of(
        st.lists(st.one_of(USES, OUTCOME_RECORDS), min_size=1, max_size=4).map(lambda r: ("record", r)),
        st.just(("compact", [])),
        st.just(("read", [])),
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_compactions_and_incremental_reads_never_change_what_is_read(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, list[Record]]]
) -> None:
    """Whatever is recorded, wherever the log is folded and however often a reader reads: a reader
    that kept folding, a fresh reader and the records folded in memory all agree."""
    root = tmp_path_factory.mktemp("ledger")
    writer, reader = ledger_at(root, compact_at=1 << 30), ledger_at(root)
    reference = LedgerState()
    for at, (action, records) in enumerate(steps):
        if action == "record":
            writer.record(records, at=NOW + at)
            for record in records:
                reference.apply(record, NOW + at)
        elif action == "compact":
            writer.compact()
        else:
            reader.usage()
    expected = reference.usage()
    assert reader.usage() == expected
    assert ledger_at(root).usage() == expected
    assert {uri: reader.fed(uri) for uri in expected} == {uri: reference.fed(uri) for uri in expected}
