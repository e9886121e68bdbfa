"""Benchmark of reading the use ledger: ``UseLedger.usage()`` after many uses, folded vs one log.

``--uses`` uses of ``--memories`` memories are recorded the way a training run records them: one
append per case with the uses of its five memories by the case's rollout and the rollout's outcome
(one trajectory). The folded ledger (the log folded into ``ledger.json`` past 1 MiB) is read
``--reads`` times by a fresh ledger object (what a new process, or a read after another process
compacted, pays), by the same object with nothing appended (what the Memories screen and a server
pay between changes) and by the same object after one more case (it folds only that line); the
baseline is the same records as one unbounded log read whole by a fresh object (same parser, no read
limit). All measured in the same run; the figures are medians. Run from the repository root::

    .venv/bin/python bench/hotness.py [--uses 200000] [--memories 500] [--reads 15]

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import Outcome, Record, Result, Use, rollout_consumer
from ovtui.storage.paths import WorkspacePaths

PER_CASE = 5
START = 1_800_000_000.0
EXPERIENCES = "viking://user/default/memories/experiences"
TRAJECTORIES = "viking://user/default/memories/trajectories"


def _case(case: int, memories: int) -> list[Record]:
    """One case: ``PER_CASE`` memories (cycling through all of them) used by its rollout, then its
    outcome."""
    consumer = rollout_consumer(f"{case:032x}")
    uses: list[Record] = [
        Use(f"{EXPERIENCES}/m{(case * PER_CASE + k) % memories}.md", consumer, "agent", 1)
        for k in range(PER_CASE)
    ]
    result = Result(("success", "failure", "partial")[case % 3], f"{TRAJECTORIES}/case_{case}.md")
    return [*uses, Outcome(consumer, (result,), final=True)]


def _median_s(read: Callable[[], int], reads: int) -> tuple[float, int]:
    times, counted = [], 0
    for _ in range(reads):
        started = time.perf_counter()
        counted = read()
        times.append(time.perf_counter() - started)
    return statistics.median(times), counted


def _uses(ledger: UseLedger) -> int:
    return sum(use.count for use in ledger.usage().values())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uses", type=int, default=200_000)
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--reads", type=int, default=15)
    args = parser.parse_args()
    cases = args.uses // PER_CASE
    with tempfile.TemporaryDirectory() as folder:
        folded_root, baseline_root = Path(folder, "folded"), Path(folder, "baseline")
        folded_root.mkdir()
        baseline_root.mkdir()
        paths = WorkspacePaths(folded_root)
        # The memories exist: the uses of deleted ones would be dropped at compaction.
        folder_of = paths.path_for(f"{EXPERIENCES}/m0.md").parent
        folder_of.mkdir(parents=True)
        for n in range(args.memories):
            (folder_of / f"m{n}.md").write_text("x", encoding="utf-8")
        folded = UseLedger(paths)
        started = time.perf_counter()
        for case in range(cases):
            folded.record(_case(case, args.memories), at=START + case)
        record_s = (time.perf_counter() - started) / cases
        # Never folded, read whole: the same records as one log.
        baseline = UseLedger(WorkspacePaths(baseline_root), compact_at=1 << 62, read_limit=1 << 62)
        for case in range(cases):
            baseline.record(_case(case, args.memories), at=START + case)

        fresh_s, fresh_uses = _median_s(lambda: _uses(UseLedger(paths)), args.reads)
        warm = UseLedger(paths)
        _uses(warm)
        warm_s, warm_uses = _median_s(lambda: _uses(warm), args.reads)
        baseline_s, baseline_uses = _median_s(
            lambda: _uses(UseLedger(baseline.paths, read_limit=1 << 62)), args.reads
        )
        assert fresh_uses == warm_uses == baseline_uses == cases * PER_CASE
        incremental = []
        for n in range(cases, cases + args.reads):
            folded.record(_case(n, args.memories), at=START + n)
            started = time.perf_counter()
            counted = _uses(warm)
            incremental.append(time.perf_counter() - started)
        assert counted == (cases + args.reads) * PER_CASE
        incremental_s = statistics.median(incremental)
        fed = warm.fed(f"{EXPERIENCES}/m0.md")
        assert fed and all(f.trajectory for f in fed)
        sizes = {
            "log_bytes": folded.path.stat().st_size,
            "summary_bytes": folded.summary_path.stat().st_size,
            "baseline_log_bytes": baseline.path.stat().st_size,
        }
    figures = {
        "bench": "hotness",
        "uses": fresh_uses,
        "memories": args.memories,
        "usage_fresh_median_ms": round(fresh_s * 1000, 2),
        "usage_unchanged_median_ms": round(warm_s * 1000, 3),
        "usage_after_one_case_median_ms": round(incremental_s * 1000, 3),
        "baseline_usage_median_ms": round(baseline_s * 1000, 2),
        "fresh_ratio_to_baseline": round(fresh_s / baseline_s, 3),
        "record_mean_ms": round(record_s * 1000, 3),
        **sizes,
    }
    print(
        f"usage(): {figures['usage_fresh_median_ms']} ms folded (fresh reader) vs "
        f"{figures['baseline_usage_median_ms']} ms one log ({figures['fresh_ratio_to_baseline']}x); "
        f"{figures['usage_unchanged_median_ms']} ms unchanged, "
        f"{figures['usage_after_one_case_median_ms']} ms after one more case (same reader)"
    )
    print(
        f"log {sizes['log_bytes']} B, summary {sizes['summary_bytes']} B, one log "
        f"{sizes['baseline_log_bytes']} B; record {figures['record_mean_ms']} ms a case"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
