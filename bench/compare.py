"""Benchmark of ``ovtui compare`` on the sample environment and on tau2 airline with the replay
agent: the compare of two snapshots, the A/A spread over repeats at 1 and at 4 trials (the noise
floor), and the HTML report's size.

A sample workspace is trained one epoch (every plan applied); the policy right after its first
history record is compared with the current one through ``Workspace.compare``, timed against a
plain ``Workspace.evaluate`` of one policy measured in the same run (a compare runs three). The
A/A spread is the delta of ``compare current current`` over ``--repeats`` repeats at each trial
count: the sample's agent is scripted, so its spread is the floor of a deterministic agent (zero).
Beside it, the same paired statistics over a seeded flaky agent (each trial passes with the case's
own chance, drawn once per case) show the floor a sampling agent would have at 1 and 4 trials.

The tau2 half runs tau2 airline's 30 train and 20 test tasks with ``[trainer] agent =
"tau2-replay"``: a recorded agent of ``RECORDINGS`` conversations per task, each one solving the
task (its expected tool calls and what it must tell the user) with the task's own chance (seeded),
else doing nothing; graded by the tau2 reward. The workspace is trained one epoch on the train
replays and the policy after its first record is compared with the current one on the test split.
The replay agent does not read experiences, so that compare measures the recorded agent's noise:
its verdict should be "not distinguishable from noise". For each A/A repeat the recordings of each
task are replayed in another (seeded) order, as a new sample of the same agent. Run from the
repository root::

    .venv/bin/python bench/compare.py [--repeats 20]

The last line printed is one JSON object with the figures of both halves.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ovtui.environments.sample.workspace import write_sample_workspace
from ovtui.environments.tau2_airline import data as tau2_data
from ovtui.train.comparison import Comparison
from ovtui.train.inference import paired
from ovtui.train.reports import RunReport
from ovtui.wiring.registry import ENVIRONMENTS
from ovtui.wiring.services.measures import CompareOptions
from ovtui.wiring.workspace import TrainOptions, Workspace

FLAKY_CASES = 15  # as many as the sample's test split
# Recorded conversations per tau2 task: a compare at 4 trials replays 3 × 4 of them (A, B, A again).
RECORDINGS = 12
TAU2_DATASET = "airline"
REPLAY_FILE = "recorded.jsonl"


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


def _aa_spread(deltas: list[float], times: list[float]) -> dict[str, float]:
    return {**_spread(deltas), "median_s": round(statistics.median(times), 3)}


async def _snapshots(workspace: Workspace, first: str) -> tuple[RunReport, Comparison, float, float]:
    """The compare of the policy after record ``first`` with the current one, its time and the
    time of one plain eval of the current policy (the floor: a compare runs three)."""
    started = time.perf_counter()
    await workspace.runs.evaluate()
    eval_s = time.perf_counter() - started
    started = time.perf_counter()
    report = await workspace.measures.compare(CompareOptions(a=first, b="current"))
    compare_s = time.perf_counter() - started
    assert report.comparison is not None
    return report, report.comparison, compare_s, eval_s


async def _aa(
    workspace: Workspace, repeats: int, trials: int, before_each: Callable[[int], None] | None = None
) -> dict[str, float]:
    """The spread of ``compare current current`` over ``repeats`` at ``trials``; ``before_each``
    is told the repeat's number before it runs."""
    deltas, times = [], []
    for repeat in range(repeats):
        if before_each is not None:
            before_each(repeat)
        started = time.perf_counter()
        same = await workspace.measures.compare(CompareOptions(a="current", b="current", trials=trials))
        times.append(time.perf_counter() - started)
        assert same.comparison is not None
        deltas.append(same.comparison.ab.delta)
    return _aa_spread(deltas, times)


async def _sample(root: Path, repeats: int) -> dict[str, object]:
    workspace = Workspace(root)
    trained = await workspace.runs.train(TrainOptions(epochs=1, approve="all", eval_split=None))
    snapshots, comparison, compare_s, eval_s = await _snapshots(workspace, trained.history_ids[0])
    aa: dict[str, object] = {}
    for trials in (1, 4):
        aa[f"scripted_trials_{trials}"] = await _aa(workspace, repeats, trials)
        aa[f"flaky_trials_{trials}"] = _spread(_flaky_aa(repeats, trials, seed=trials))
    html = workspace.reading.html_report(snapshots)
    train_html = workspace.reading.html_report(workspace.reading.run_report(trained.run_id))
    return {
        **_figures(comparison, compare_s, eval_s),
        "aa_repeats": repeats,
        "aa": aa,
        "compare_html_bytes": len(html.encode()),
        "train_html_bytes": len(train_html.encode()),
    }


def _figures(c: Comparison, compare_s: float, eval_s: float) -> dict[str, object]:
    return {
        "cases": c.ab.cases,
        "compare_s": round(compare_s, 3),
        "eval_floor_s": round(eval_s, 3),
        "compare_ratio_to_eval": round(compare_s / eval_s, 2),
        "delta": round(c.ab.delta, 4),
        "ci": [round(x, 4) for x in c.ab.ci or []],
        "p_value": round(c.ab.p_value, 4),
        "verdict": c.verdict,
    }


def _conversation(task_id: str, solve: bool, rollout_id: str) -> dict[str, object]:
    """One recorded conversation of ``task``: its expected tool calls and what it must tell the
    user when it ``solve``s it, else nothing done and nothing said."""
    criteria = tau2_data.tasks()[task_id]["evaluation_criteria"]
    actions = criteria.get("actions") or [] if solve else []
    return {
        "rollout_id": rollout_id,
        "task_id": task_id,
        "tool_calls": [
            {"name": a["name"], "arguments": a["arguments"], "requestor": "assistant"} for a in actions
        ],
        "assistant_texts": [f"Noted: {info}" for info in criteria.get("communicate_info") or []]
        if solve
        else [],
        "termination": "user_stop",
    }


def _recorded_agent(task_ids: list[str], seed: int) -> dict[str, list[dict[str, object]]]:
    """RECORDINGS conversations per task, each solving it with the task's own chance (seeded)."""
    rng = random.Random(seed)
    recorded = {}
    for task_id in task_ids:
        chance = rng.random()
        recorded[task_id] = [
            _conversation(task_id, rng.random() < chance, f"{task_id}-{n}") for n in range(RECORDINGS)
        ]
    return recorded


def _write_replays(root: Path, recorded: dict[str, list[dict[str, object]]], order_seed: int | None) -> None:
    """The recordings as ``[tau2] replay`` reads them; ``order_seed``: each task's in another order."""
    rng = random.Random(order_seed)
    lines = []
    for conversations in recorded.values():
        chosen = list(conversations)
        if order_seed is not None:
            rng.shuffle(chosen)
        lines += [json.dumps(c) + "\n" for c in chosen]
    (root / REPLAY_FILE).write_text("".join(lines), encoding="utf-8")


def _tau2_workspace(root: Path) -> dict[str, list[dict[str, object]]]:
    """A workspace on tau2 airline's tasks with the replay agent; returns its recorded agent."""
    write_sample_workspace(root)
    environment = ENVIRONMENTS.get("tau2-airline")(None)
    folder = root / "datasets" / TAU2_DATASET
    folder.mkdir(parents=True)
    task_ids = []
    # tau2's held-out tasks are this workspace's validation split: what compare scores by default.
    for split, named in (("train", "train"), ("test", "validation")):
        cases = environment.cases(split)
        task_ids += [str(c.input["task_id"]) for c in cases]
        (folder / f"{named}.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in cases))
    config = (root / "ovtui.toml").read_text(encoding="utf-8")
    config = config.replace('agent = "sample"', 'agent = "tau2-replay"')
    config = config.replace('dataset = "support"', f'dataset = "{TAU2_DATASET}"')
    config = config.replace("[trainer]\n", '[trainer]\nenvironment = "tau2-airline"\n')
    (root / "ovtui.toml").write_text(config + f'\n[tau2]\nreplay = "{REPLAY_FILE}"\n', encoding="utf-8")
    recorded = _recorded_agent(task_ids, seed=23)
    _write_replays(root, recorded, None)
    return recorded


async def _tau2(root: Path, repeats: int) -> dict[str, object]:
    recorded = _tau2_workspace(root)
    workspace = Workspace(root)
    trained = await workspace.runs.train(TrainOptions(epochs=1, approve="all", eval_split=None))
    if not trained.history_ids:
        raise SystemExit(f"tau2: training applied nothing: {trained.errors or trained.summary()}")
    snapshots, comparison, compare_s, eval_s = await _snapshots(workspace, trained.history_ids[0])
    aa: dict[str, object] = {}
    for trials in (1, 4):

        def reorder(repeat: int, trials: int = trials) -> None:
            _write_replays(root, recorded, order_seed=1000 * trials + repeat)

        aa[f"replay_trials_{trials}"] = await _aa(workspace, repeats, trials, reorder)
    solved = sum(sum(bool(c["tool_calls"] or c["assistant_texts"]) for c in cs) for cs in recorded.values())
    return {
        **_figures(comparison, compare_s, eval_s),
        "history_records": len(trained.history_ids),
        "recordings_per_task": RECORDINGS,
        "recorded_solving_share": round(solved / (RECORDINGS * len(recorded)), 3),
        "aa_repeats": repeats,
        "aa": aa,
        "compare_html_bytes": len(workspace.reading.html_report(snapshots).encode()),
    }


async def _run(folder: Path, repeats: int) -> dict[str, object]:
    sample_root = folder / "sample"
    write_sample_workspace(sample_root)
    return {
        "bench": "compare",
        "sample": await _sample(sample_root, repeats),
        "tau2": await _tau2(folder / "tau2", repeats),
    }


def _say(name: str, figures: dict[str, Any]) -> None:
    print(
        f"{name}: compare of two snapshots: {figures['compare_s']} s for {figures['cases']} cases "
        f"(one eval: {figures['eval_floor_s']} s, {figures['compare_ratio_to_eval']}x); "
        f"Δ {figures['delta']:+} CI {figures['ci']} p={figures['p_value']}: {figures['verdict']}"
    )
    for label, spread in figures["aa"].items():
        print(f"{name}: A/A {label}: {spread}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = asyncio.run(_run(Path(folder), args.repeats))
    sample, tau2 = figures["sample"], figures["tau2"]
    assert isinstance(sample, dict) and isinstance(tau2, dict)
    _say("sample", sample)
    print(
        f"sample: html: compare {sample['compare_html_bytes']} B, training run {sample['train_html_bytes']} B"
    )
    _say("tau2", tau2)
    print(f"tau2: html: compare {tau2['compare_html_bytes']} B")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
