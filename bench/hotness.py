"""Benchmark of reading memory uses: ``HotnessLog.usage()`` after many uses, compacted vs one log.

``--uses`` uses of ``--memories`` memories are recorded the way the sample agent records them (one
append per case, five memories each). The compacted store (the log folded into ``hotness.json``
past 1 MiB) is read ``--reads`` times; the baseline is the same uses as one unbounded log, what was
read on every Memories load and every batch before compaction (same line parser, no read limit).
Both are measured in the same run; the figures are medians. Run from the repository root::

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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ovtui.memory.hotness import HotnessLog
from ovtui.storage.paths import WorkspacePaths

PER_CASE = 5
START = 1_800_000_000.0


def _uris(uses: int, memories: int) -> list[list[str]]:
    """One batch per case: ``PER_CASE`` memories, cycling through all of them."""
    return [
        [
            f"viking://user/default/memories/experiences/m{(case * PER_CASE + k) % memories}.md"
            for k in range(PER_CASE)
        ]
        for case in range(uses // PER_CASE)
    ]


def _median_read_s(log: HotnessLog, reads: int) -> tuple[float, int]:
    times = []
    for _ in range(reads):
        started = time.perf_counter()
        counted = sum(use.count for use in log.usage().values())
        times.append(time.perf_counter() - started)
    return statistics.median(times), counted


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--uses", type=int, default=200_000)
    parser.add_argument("--memories", type=int, default=500)
    parser.add_argument("--reads", type=int, default=15)
    args = parser.parse_args()
    batches = _uris(args.uses, args.memories)
    with tempfile.TemporaryDirectory() as folder:
        compacted_root, baseline_root = Path(folder, "compacted"), Path(folder, "baseline")
        compacted_root.mkdir()
        baseline_root.mkdir()
        compacted = HotnessLog(WorkspacePaths(compacted_root))
        # The memories exist: uses of deleted ones would be dropped at compaction.
        folder_of = compacted.paths.path_for(batches[0][0]).parent
        folder_of.mkdir(parents=True)
        for n in range(args.memories):
            (folder_of / f"m{n}.md").write_text("x", encoding="utf-8")
        started = time.perf_counter()
        for case, uris in enumerate(batches):
            compacted.record(uris, at=START + case)
        record_s = (time.perf_counter() - started) / len(batches)
        # Never folded, read whole: as before compaction.
        baseline = HotnessLog(WorkspacePaths(baseline_root), compact_at=1 << 62, read_limit=1 << 62)
        for case, uris in enumerate(batches):
            baseline.record(uris, at=START + case)
        compacted_s, compacted_uses = _median_read_s(compacted, args.reads)
        baseline_s, baseline_uses = _median_read_s(baseline, args.reads)
        assert compacted_uses == baseline_uses == len(batches) * PER_CASE
        sizes = {
            "log_bytes": compacted.path.stat().st_size,
            "summary_bytes": compacted.summary_path.stat().st_size,
            "baseline_log_bytes": baseline.path.stat().st_size,
        }
    figures = {
        "bench": "hotness",
        "uses": compacted_uses,
        "memories": args.memories,
        "usage_median_ms": round(compacted_s * 1000, 2),
        "baseline_usage_median_ms": round(baseline_s * 1000, 2),
        "ratio_to_baseline": round(compacted_s / baseline_s, 3),
        "record_mean_ms": round(record_s * 1000, 3),
        **sizes,
    }
    print(
        f"usage(): {figures['usage_median_ms']} ms compacted vs {figures['baseline_usage_median_ms']} ms "
        f"one log ({figures['ratio_to_baseline']}x); log {sizes['log_bytes']} B, summary "
        f"{sizes['summary_bytes']} B, one log {sizes['baseline_log_bytes']} B; record "
        f"{figures['record_mean_ms']} ms a case"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
