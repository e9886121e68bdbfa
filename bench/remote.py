"""Remote benchmark protocol: 1,000 sample-environment executions through ``ovtui env serve sample``
with 32 in flight, against the same executions in-process (the floor, measured in the same run).

Run: ``.venv/bin/python bench/remote.py [--executions N] [--in-flight N] [--workers N] [--repeat N]``.
Prints executions/s both ways and the overhead per execution (remote wall − in-process wall) / N;
goal ≤ 2 ms per execution over loopback. Ends with one JSON line of the figures (medians).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet
from ovtui.environments.sample.environment import SampleEnvironment
from ovtui.environments.sample.workspace import starter_memories
from ovtui.train.components.remote import RemoteRolloutExecutor

GOAL_MS = 2.0


def policy_set() -> ExperienceSet:
    from ovtui.core.domain import Experience, PolicyStatus

    policies = [
        Experience(
            name=e["name"],
            uri=f"viking://user/default/memories/experiences/{e['name']}.md",
            version=1,
            status=PolicyStatus.PRODUCTION,
            content=e["content"],
        )
        for e in starter_memories()["experiences"]
    ]
    return ExperienceSet(root_uri="viking://user/default/memories/experiences", policies=policies)


def workload(environment: SampleEnvironment, n: int) -> list[Case]:
    pool = environment.cases("train") + environment.cases("test")
    return [pool[i % len(pool)] for i in range(n)]


async def in_process(
    environment: SampleEnvironment, cases: list[Case], policies: ExperienceSet
) -> tuple[float, float]:
    context = ExecutionContext(policy_snapshot_id="bench-local")
    cpu, started = cpu_seconds(), time.perf_counter()
    for case in cases:
        await environment.execute(case, policies, context)
    return time.perf_counter() - started, cpu_seconds() - cpu


async def remote(
    url: str, pid: int, cases: list[Case], policies: ExperienceSet, in_flight: int, run: int
) -> tuple[float, float]:
    executor = RemoteRolloutExecutor([url], max_in_flight=in_flight)
    context = ExecutionContext(policy_snapshot_id=f"bench-remote-{run}")
    cpu, started = cpu_seconds() + cpu_seconds(pid), time.perf_counter()
    rollouts = await executor.execute(cases, policies, context)
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds() + cpu_seconds(pid) - cpu
    failed = [r for r in rollouts if "execution_error" in r.metadata]
    if failed:
        raise SystemExit(f"{len(failed)} executions failed: {failed[0].metadata['execution_error']}")
    return elapsed, cpu


def cpu_seconds(pid: int | None = None) -> float:
    """CPU time (user + system) of this process, or of ``pid`` from /proc (Linux)."""
    if pid is None:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_service(state: Path, workers: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "ovtui", "env", "serve", "sample", "--port", "0", "--state", str(state),
         "--workers", str(workers)],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executions", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    environment = SampleEnvironment()
    policies = policy_set()
    cases = workload(environment, args.executions)
    local_pairs = [asyncio.run(in_process(environment, cases, policies)) for _ in range(args.repeat)]
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_service(Path(tmp), args.workers)
        try:
            asyncio.run(remote(url, proc.pid, cases[:64], policies, args.in_flight, -1))  # warm up
            remote_pairs = [
                asyncio.run(remote(url, proc.pid, cases, policies, args.in_flight, run))
                for run in range(args.repeat)
            ]
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    local_runs, remote_runs = [w for w, _ in local_pairs], [w for w, _ in remote_pairs]
    local, far = statistics.median(local_runs), statistics.median(remote_runs)
    n = args.executions
    overhead_ms = (far - local) / n * 1000
    # CPU of client + service beyond the in-process CPU: the cost that does not depend on how busy
    # the machine's other processes keep the cores (wall time does).
    cpu_overhead_ms = (
        (statistics.median(c for _, c in remote_pairs) - statistics.median(c for _, c in local_pairs))
        / n
        * 1000
    )
    load = os.getloadavg()[0]
    print(f"{n} sample executions, {args.in_flight} in flight, service with {args.workers} workers")
    print(
        f"  in-process : median {local:.2f} s → {n / local:.0f} executions/s"
        f"  runs: {', '.join(f'{t:.2f}' for t in local_runs)}"
    )
    print(
        f"  via service: median {far:.2f} s → {n / far:.0f} executions/s"
        f"  runs: {', '.join(f'{t:.2f}' for t in remote_runs)}"
    )
    print(f"  overhead per execution: {overhead_ms:.2f} ms wall (goal ≤ {GOAL_MS:.0f} ms)")
    print(
        f"  CPU overhead per execution (client + service): {cpu_overhead_ms:.2f} ms; load average {load:.1f}"
    )
    print(
        json.dumps(
            {
                "bench": "remote",
                "executions": n,
                "in_flight": args.in_flight,
                "in_process_s": round(local, 4),
                "remote_s": round(far, 4),
                "in_process_per_s": round(n / local, 1),
                "remote_per_s": round(n / far, 1),
                "overhead_ms_per_execution": round(overhead_ms, 3),
                "cpu_overhead_ms_per_execution": round(cpu_overhead_ms, 3),
                "load_average": round(load, 2),
                "goal_ms": GOAL_MS,
                "met": overhead_ms <= GOAL_MS,
            }
        )
    )


if __name__ == "__main__":
    main()
