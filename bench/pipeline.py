"""Benchmark: the offline learning path, analyze → estimate → plan → apply.

(a) 1,000 rollouts through the offline backend into a workspace of 1,000 experiences, in batches
of the default size: rollouts/s for the whole path (target ≥ 200/s). The rollouts are produced by
the sample agent beforehand (not timed). The baseline printed beside it is the same rollouts
through analyze + estimate only (no plan, no apply), to show what the write path costs.

(b) The LLM path against the local fake endpoint lives in bench/llm_calls.py.

Run: .venv/bin/python bench/pipeline.py [--rollouts N] [--experiences N] [--repeat K]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ovtui.core.context import ExecutionContext, RunContext  # noqa: E402
from ovtui.core.domain import Rollout  # noqa: E402
from ovtui.core.fileformat import render_memory  # noqa: E402
from ovtui.environments.sample.agent import SampleAgentExecutor  # noqa: E402
from ovtui.environments.sample.generate import (  # noqa: E402
    DEFAULT_SEED,
    DEFAULT_TEST_COUNT,
    DEFAULT_TRAIN_COUNT,
    generate_cases,
    write_dataset,
)
from ovtui.environments.sample.workspace import DATASET  # noqa: E402
from ovtui.memory.store import MemoryStore  # noqa: E402
from ovtui.memory.types import EXPERIENCES  # noqa: E402
from ovtui.wiring.composition import Composition  # noqa: E402
from ovtui.wiring.workspace import Workspace  # noqa: E402

TOPICS = ["billing", "seating", "meals", "loyalty", "baggage", "pets", "visas", "wifi", "lounges", "upgrades"]


def make_workspace(root: Path, experiences: int) -> None:
    folder = root / "memories" / EXPERIENCES
    folder.mkdir(parents=True)
    for i in range(experiences):
        topic = TOPICS[i % len(TOPICS)]
        name = f"{topic}_question_{i:05d}"
        content = (
            f"## Situation\n- The customer asks about {topic} (variant {i})\n"
            f"## Approach\n- Look up the {topic} policy\n- Answer with the rule that applies\n"
            f"## Reflect\n- NEVER promise an exception to the {topic} policy"
        )
        fields = {"experience_name": name, "memory_type": EXPERIENCES, "status": "production", "version": 1}
        (folder / f"{name}.md").write_text(render_memory(content, fields), encoding="utf-8")
    write_dataset(root / "datasets" / DATASET, DEFAULT_SEED, DEFAULT_TRAIN_COUNT, DEFAULT_TEST_COUNT)
    (root / "ovtui.toml").write_text('[review]\npolicy = "all"\n', encoding="utf-8")


async def produce_rollouts(workspace: Workspace, count: int) -> list[Rollout]:
    cases = generate_cases("train", count, seed=99)
    return await SampleAgentExecutor().execute(
        cases, workspace.reading.experiences(), ExecutionContext("bench")
    )


async def run_once(
    root: Path, rollouts: list[Rollout], batch: int, *, apply: bool
) -> tuple[float, float, int]:
    """Wall seconds for the whole path, CPU seconds of this process (every thread) meanwhile, and
    how many batches wrote something. CPU varies less than wall time on a shared machine."""
    workspace = Workspace(root)
    store = MemoryStore.open(root)  # the kernel composed as the workspace's train run composes it
    kernel = Composition(workspace.config, store)
    engine = kernel.engine(RunContext(), approve="all", dry_run=False, wait_for_review=False)
    policy = workspace.reading.experiences()
    wrote = 0
    started, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(rollouts), batch):
        estimated = await engine.analyze_and_estimate(rollouts[start : start + batch], policy)
        if apply:
            outcome = await engine.plan_and_apply(estimated.gradients, policy, analyses=estimated.analyses)
            if outcome.result is not None:
                policy = outcome.result.updated_policy_set
                wrote += bool(outcome.result.written_uris or outcome.result.deleted_uris)
    return time.perf_counter() - started, time.process_time() - cpu, wrote


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rollouts", type=int, default=1000)
    parser.add_argument("--experiences", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    full: list[float] = []
    baseline: list[float] = []
    cpu: dict[bool, list[float]] = {True: [], False: []}
    wrote = 0
    for _ in range(args.repeat):
        for apply, sink in ((True, full), (False, baseline)):
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                make_workspace(root, args.experiences)
                rollouts = asyncio.run(produce_rollouts(Workspace(root), args.rollouts))
                elapsed, used, wrote_now = asyncio.run(run_once(root, rollouts, args.batch, apply=apply))
                sink.append(elapsed)
                cpu[apply].append(used)
                wrote = max(wrote, wrote_now)
    batches = -(-args.rollouts // args.batch)
    rate = args.rollouts / statistics.median(full)
    base_rate = args.rollouts / statistics.median(baseline)
    print(f"offline path, {args.rollouts} rollouts into {args.experiences} experiences, batch {args.batch}")
    print(
        f"  analyze+estimate+plan+apply: median {statistics.median(full):.2f} s  → {rate:.0f} rollouts/s"
        f"  (target ≥ 200/s)  runs: {', '.join(f'{t:.2f}' for t in full)}"
    )
    print(
        f"  baseline analyze+estimate only: median {statistics.median(baseline):.2f} s"
        f" → {base_rate:.0f} rollouts/s"
    )
    ratio = statistics.median(full) / statistics.median(baseline)
    print(f"  ratio full/baseline time: {ratio:.2f}×  (goal ≤ 1.5×)")
    cpu_full, cpu_base = statistics.median(cpu[True]), statistics.median(cpu[False])
    print(f"  CPU: full {cpu_full:.2f} s, baseline {cpu_base:.2f} s → {cpu_full / cpu_base:.2f}×")
    # The sample agent's intents are few: once learned, later batches plan nothing new, so the ratio
    # mostly measures what a batch costs when it has nothing to write (the reload that would see
    # an edit made by someone else, an empty plan).
    print(f"  batches that wrote: {wrote} of {batches} (the rest planned nothing new)")
    summary = {
        "bench": "pipeline",
        "figures": {
            "rollouts": args.rollouts,
            "experiences": args.experiences,
            "batch": args.batch,
            "full_s": statistics.median(full),
            "rollouts_per_s": rate,
            "full_over_baseline": ratio,
            "cpu_full_s": cpu_full,
            "cpu_full_over_baseline": cpu_full / cpu_base,
            "batches": batches,
            "batches_that_wrote": wrote,
            "load_average_1m": os.getloadavg()[0],
        },
        "baseline": {
            "analyze_estimate_s": statistics.median(baseline),
            "rollouts_per_s": base_rate,
            "cpu_s": cpu_base,
        },
        "goals": {"full_over_baseline": 1.5, "rollouts_per_s_quiet_2_cores": 200},
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
