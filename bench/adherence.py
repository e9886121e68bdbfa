"""Benchmark: the adherence check against a slipping agent (goals: ≥ 95% of the injected
violations found, ≤ 2% of clean rollouts flagged, ≤ 1 ms per directive checked offline).

The sample workspace is trained (``ovtui train --approve all``: what a user does), then its
cases are run by the sample agent (clean) and by the same agent slipping with probability ``--p``
(``ovtui.testing.slipping_agent``: a slipping rollout leaves out one of its actions or its question
to the user) over ``--rounds`` seeds. Figures:

  injected      slips that left out what a directive the clean rollout followed asks for (a slip of
                a step no directive asks for breaks nothing, and is counted apart: uncovered)
  found         of those, the slipped rollouts in which the check finds that directive violated
  false_flags   clean rollouts in which the check finds any directive violated
  us_per_directive  the check of one directive against a trajectory read once (median of the
                rollouts); beside it the floor measured in the same run, reading the trajectory

The last line printed is one JSON object: figures, floors and goals.

Run: .venv/bin/python bench/adherence.py [--p 0.3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ovtui.cli.init import init_workspace  # noqa: E402
from ovtui.core.context import ExecutionContext  # noqa: E402
from ovtui.core.domain import Rollout  # noqa: E402
from ovtui.environments.sample.agent import SampleAgentExecutor  # noqa: E402
from ovtui.environments.sample.environment import SampleEnvironment  # noqa: E402
from ovtui.plugins.adherence import ASK, Directive  # noqa: E402
from ovtui.testing.slipping_agent import SLIP, SlippingAgent  # noqa: E402
from ovtui.train.adherence.checker import check  # noqa: E402
from ovtui.train.adherence.recorder import DirectiveReader, used_experiences  # noqa: E402
from ovtui.wiring.workspace import Workspace  # noqa: E402

GOALS = {"found": 0.95, "false_flags": 0.02, "us_per_directive": 1000.0}


def verdicts(reader: DirectiveReader, rollout: Rollout, policy: object) -> list[tuple[Directive, str]]:
    path = reader.trajectory(rollout.messages)
    used = used_experiences(rollout, policy)  # type: ignore[arg-type]
    return [(d, check(d, path)) for e in used for d in reader.directives(e.content)]


def asks_for(directive: Directive, skipped: str) -> bool:
    return skipped in directive.tools or (skipped == ASK and directive.kind == "confirm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--p", type=float, default=0.3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "sample"
        init_workspace(root, sample=True)
        subprocess.run(
            [sys.executable, "-m", "ovtui", "train", str(root), "--approve", "all", "--no-eval"],
            check=True,
            capture_output=True,
        )
        policy = Workspace(root, reading=True).reading.experiences()
    environment = SampleEnvironment()
    reader = DirectiveReader(environment)
    cases = environment.cases("train") + environment.cases("test")
    context = ExecutionContext(policy_snapshot_id="bench")
    clean = SampleAgentExecutor().execute_sync(cases, policy, context)
    clean_verdicts = [verdicts(reader, r, policy) for r in clean]
    flagged = sum(any(v == "violated" for _, v in found) for found in clean_verdicts)

    injected = found = uncovered = 0
    for seed in range(args.rounds):
        slipped = SlippingAgent(args.p, seed=seed).execute_sync(cases, policy, context)
        for before, after in zip(clean_verdicts, slipped, strict=True):
            skipped = after.metadata.get(SLIP)
            if not isinstance(skipped, str):
                continue
            broken = {d for d, v in before if v == "followed" and asks_for(d, skipped)}
            if not broken:
                uncovered += 1
                continue
            injected += 1
            now = dict(verdicts(reader, after, policy))
            found += any(now.get(d) == "violated" for d in broken)

    per_directive: list[float] = []
    floor: list[float] = []
    for rollout in clean:
        start = time.perf_counter()
        path = reader.trajectory(rollout.messages)
        read = time.perf_counter()
        directives = [d for e in used_experiences(rollout, policy) for d in reader.directives(e.content)]
        begin = time.perf_counter()
        for directive in directives:
            check(directive, path)
        end = time.perf_counter()
        floor.append((read - start) * 1e6)
        if directives:
            per_directive.append((end - begin) * 1e6 / len(directives))

    figures = {
        "rollouts": len(clean),
        "slipped_rounds": args.rounds,
        "p": args.p,
        "injected": injected,
        "uncovered": uncovered,
        "found": found / injected if injected else None,
        "false_flags": flagged / len(clean),
        "us_per_directive": statistics.median(per_directive),
        "floor_us_read_trajectory": statistics.median(floor),
    }
    print(f"injected violations found: {found}/{injected} (goal ≥ {GOALS['found']:.0%})")
    print(f"clean rollouts flagged: {flagged}/{len(clean)} (goal ≤ {GOALS['false_flags']:.0%})")
    print(
        f"check per directive: {figures['us_per_directive']:.1f} µs (goal ≤ 1 ms); "
        f"floor, reading the trajectory: {figures['floor_us_read_trajectory']:.1f} µs"
    )
    print(json.dumps({"bench": "adherence", "figures": figures, "goals": GOALS}))


if __name__ == "__main__":
    main()
