"""Benchmark: how long the ``ovtui`` command takes to start (goal: ``ovtui --help`` in ≤ 0.2 s).

Every figure is the median wall time of ``--repeats`` fresh processes, each started the way a person
starts it (the console script of this venv):

  python_s      ``python -c pass``: the interpreter with its site packages, the floor no command
                can go under, measured in the same run
  pydantic_s    ``python -c "import pydantic"``: what one eager kernel import would add
  help_s        ``ovtui --help``: the goal
  command_help_s  ``ovtui train --help``, ``ovtui history --help``: one command's parser
  version_s     ``ovtui --version`` (reads the installed metadata)

The last line printed is one JSON object: figures, the floor and the goal.

Run: .venv/bin/python bench/cli_start.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_S = 0.2
SCRIPT = Path(sys.executable).with_name("ovtui")


def median_start(argv: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    repeats = parser.parse_args().repeats
    figures = {
        "python_s": median_start([sys.executable, "-c", "pass"], repeats),
        "pydantic_s": median_start([sys.executable, "-c", "import pydantic.main"], repeats),
        "help_s": median_start([str(SCRIPT), "--help"], repeats),
        "train_help_s": median_start([str(SCRIPT), "train", "--help"], repeats),
        "history_help_s": median_start([str(SCRIPT), "history", "--help"], repeats),
        "version_s": median_start([str(SCRIPT), "--version"], repeats),
    }
    for name, seconds in figures.items():
        print(f"{name:16} {seconds:6.3f} s")
    over_floor = figures["help_s"] - figures["python_s"]
    print(
        f"ovtui --help: {figures['help_s']:.3f} s, {over_floor:.3f} s over the interpreter; goal ≤ {GOAL_S} s"
    )
    print(
        json.dumps(
            {
                "bench": "cli_start",
                **figures,
                "floor_s": figures["python_s"],
                "goal_s": GOAL_S,
                "repeats": repeats,
                "met": figures["help_s"] <= GOAL_S,
            }
        )
    )


if __name__ == "__main__":
    main()
