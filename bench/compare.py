"""Benchmark of ``ovtui compare`` on the sample environment: the compare of two snapshots, the A/A
spread over repeats at 1 and at 4 trials (the noise floor), and the HTML report's size.

A sample workspace is trained one epoch (every plan applied); the policy right after its first
history record is compared with the current one through ``Workspace.compare``, timed against a
plain ``Workspace.evaluate`` of one policy measured in the same run (a compare runs three). The
A/A spread is the delta of ``compare current current`` over ``--repeats`` repeats at each trial
count: the sample's agent is scripted, so its spread is the floor of a deterministic agent (zero).
Beside it, the same paired statistics over a seeded flaky agent (each trial passes with the case's
own chance, drawn once per case) show the floor a sampling agent would have at 1 and 4 trials. Run
from the repository root::

    .venv/bin/python bench/compare.py [--repeats 20]

The last line printed is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ovtui.environments.sample.workspace import write_sample_workspace
from ovtui.train.paired import paired
from ovtui.wiring.workspace import CompareOptions, TrainOptions, Workspace

FLAKY_CASES = 15  # as many as the sample's test split


def _spread(deltas: list[float]) -> dict[str, float]:
    return {
        "mean": round(statistics.fmean(deltas), 4),
        "sd": round(statistics.pstdev(deltas), 4),
        "max_abs": round(max(abs(d) for d in deltas), 4),
    }


def _flaky_aa(repeats: int, trials: int, seed: int) -> list[float]:
    """A/A deltas of an agent whose trials are coin flips with a per-case chance (seeded)."""
    rng = random.Random(seed)
    chances = [rng.random() for _ in range(FLAKY_CASES)]
    deltas = []
    for _ in range(repeats):
        a = {f"c{i}": [int(rng.random() < p) for _ in range(trials)] for i, p in enumerate(chances)}
        again = {f"c{i}": [int(rng.random() < p) for _ in range(trials)] for i, p in enumerate(chances)}
        deltas.append(paired(a, again).delta)
    return deltas


async def _run(root: Path, repeats: int) -> dict[str, object]:
    workspace = Workspace(root)
    trained = await workspace.train(TrainOptions(epochs=1, approve="all", eval_split=None))
    first = trained.history_ids[0]

    started = time.perf_counter()
    await workspace.evaluate()
    eval_s = time.perf_counter() - started
    started = time.perf_counter()
    snapshots = await workspace.compare(CompareOptions(a=first, b="current"))
    compare_s = time.perf_counter() - started
    assert snapshots.comparison is not None

    aa: dict[str, object] = {}
    for trials in (1, 4):
        deltas, times = [], []
        for _ in range(repeats):
            started = time.perf_counter()
            same = await workspace.compare(CompareOptions(a="current", b="current", trials=trials))
            times.append(time.perf_counter() - started)
            assert same.comparison is not None
            deltas.append(same.comparison.ab.delta)
        aa[f"scripted_trials_{trials}"] = {**_spread(deltas), "median_s": round(statistics.median(times), 3)}
        aa[f"flaky_trials_{trials}"] = _spread(_flaky_aa(repeats, trials, seed=trials))

    html = workspace.html_report(snapshots)
    train_html = workspace.html_report(workspace.run_report(trained.run_id))
    c = snapshots.comparison
    return {
        "bench": "compare",
        "cases": c.ab.cases,
        "compare_s": round(compare_s, 3),
        "eval_floor_s": round(eval_s, 3),
        "compare_ratio_to_eval": round(compare_s / eval_s, 2),
        "delta": round(c.ab.delta, 4),
        "ci": [round(x, 4) for x in c.ab.ci or []],
        "p_value": round(c.ab.p_value, 4),
        "verdict": c.verdict,
        "aa_repeats": repeats,
        "aa": aa,
        "compare_html_bytes": len(html.encode()),
        "train_html_bytes": len(train_html.encode()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "ws"
        write_sample_workspace(root)
        figures = asyncio.run(_run(root, args.repeats))
    print(
        f"compare of two snapshots: {figures['compare_s']} s for {figures['cases']} cases "
        f"(one eval: {figures['eval_floor_s']} s, {figures['compare_ratio_to_eval']}x); "
        f"Δ {figures['delta']:+} CI {figures['ci']} p={figures['p_value']}: {figures['verdict']}"
    )
    aa = figures["aa"]
    assert isinstance(aa, dict)
    for name, spread in aa.items():
        print(f"A/A {name}: {spread}")
    print(f"html: compare {figures['compare_html_bytes']} B, training run {figures['train_html_bytes']} B")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
