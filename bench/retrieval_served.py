"""The served half of ``bench/retrieval.py``: ``find`` over loopback through a real ``ovtui serve``
against the same search in process (the facade's ``Workspace.find``, which the route calls: the
floor of serving it), the server's memory, and many agents at once on the workspace (find →
messages → commit), with the use ledger counted against what each agent was served.

A module of ``bench/retrieval.py``, whose one JSON line carries these figures; run on its own it
measures only the served half, on a workspace of the same shape, and ends with one JSON line of them.

Run: .venv/bin/python bench/retrieval_served.py [--experiences N] [--trajectories N] [--queries N]
[--agents N] [--rounds N]"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import httpx2 as httpx
from agent_load_support import failures, ledger_problems, run_agents
from server_support import start_cli_server, stop

from ovtui.core.fileformat import render_memory
from ovtui.memory.retrieval.service import FindQuery
from ovtui.wiring.workspace import Workspace

GOAL_P95_MS = 20.0
GOAL_TO_IN_PROCESS = 2.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


def rss_mib_of(pid: int | str = "self") -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


async def find_times(find: Callable[[FindQuery], Awaitable[object]], texts: list[str]) -> list[float]:
    """Seconds of each ``find`` of the texts (ten hits each), one after another."""
    times = []
    for text in texts:
        started = time.perf_counter()
        await find(FindQuery(text, limit=10))
        times.append(time.perf_counter() - started)
    return times


class InProcess:
    """The route's search without HTTP: the facade's find on a workspace of its own, warm."""

    def __init__(self, root: Path, texts: list[str]) -> None:
        self.workspace = Workspace(root)
        self.visibility = self.workspace.agent.visibility()
        self.times(texts[:1])  # builds the index

    def times(self, texts: list[str]) -> list[float]:
        return asyncio.run(find_times(lambda query: self.workspace.agent.find(query, self.visibility), texts))


@dataclass
class ServedRound:
    """One pass of the queries over HTTP: each find's seconds as the client saw them, the server's
    own account of it (its ``Server-Timing``: the route, the facade's find in it), and the CPU
    both processes spent."""

    times: list[float] = field(default_factory=list)
    route: list[float] = field(default_factory=list)
    server_find: list[float] = field(default_factory=list)
    server_cpu_s: float = 0.0
    client_cpu_s: float = 0.0


def cpu_s_of(pid: int) -> float:
    """User + system CPU seconds a process has spent (all its threads)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timing_of(header: str) -> dict[str, float]:
    """A ``Server-Timing`` header's stages, in seconds."""
    stages = (part.strip().split(";dur=") for part in header.split(",") if ";dur=" in part)
    return {name: float(value) / 1000 for name, value in stages}


def served_round(client: httpx.Client, texts: list[str], pid: int) -> ServedRound:
    done = ServedRound()
    server_cpu, client_cpu = cpu_s_of(pid), time.process_time()
    for text in texts:
        started = time.perf_counter()
        response = client.post("/api/v1/search/find", json={"query": text, "limit": 10})
        done.times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"find over HTTP: {response.status_code} {response.text[:300]}")
        timing = timing_of(response.headers.get("server-timing", ""))
        done.route.append(timing["route"])
        done.server_find.append(timing["find"])
    done.server_cpu_s = (cpu_s_of(pid) - server_cpu) / len(texts)
    done.client_cpu_s = (time.process_time() - client_cpu) / len(texts)
    return done


def served_times(client: httpx.Client, texts: list[str]) -> list[float]:
    times = []
    for text in texts:
        started = time.perf_counter()
        response = client.post("/api/v1/search/find", json={"query": text, "limit": 10})
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"find over HTTP: {response.status_code} {response.text[:300]}")
    return times


def health_times(client: httpx.Client, count: int) -> list[float]:
    """Round trips of ``GET /health``: what any request to the server costs at least."""
    times = []
    for _ in range(count):
        started = time.perf_counter()
        client.get("/health")
        times.append(time.perf_counter() - started)
    return times


def breakdown(rounds: list[ServedRound], local: list[list[float]], health: list[float]) -> dict[str, float]:
    """Where a served find's time goes (medians over every find of every round, in ms): inside the
    route (``route``: the body read and validated, the facade's ``find``, the answer encoded),
    outside it (the client, HTTP parsing and writing, loopback, waking the processes), against the
    same find in process and a ``/health`` round trip."""
    every = [
        (t, r, f) for done in rounds for t, r, f in zip(done.times, done.route, done.server_find, strict=True)
    ]
    return {
        "total": ms(statistics.median(t for t, _, _ in every)),
        "server_route": ms(statistics.median(r for _, r, _ in every)),
        "server_find": ms(statistics.median(f for _, _, f in every)),
        "server_route_beyond_find": ms(statistics.median(r - f for _, r, f in every)),
        "outside_route": ms(statistics.median(t - r for t, r, _ in every)),
        "in_process_find": ms(statistics.median(t for times in local for t in times)),
        "health_round_trip": ms(statistics.median(health)),
        "server_cpu_per_find": ms(statistics.median(done.server_cpu_s for done in rounds)),
        "client_cpu_per_find": ms(statistics.median(done.client_cpu_s for done in rounds)),
    }


def one_write(root: Path, i: int) -> None:
    """An experience written as the store writes (a rename into the folder)."""
    folder = root / "memories" / "experiences"
    path, temp = folder / f"served_write_{i:03d}.md", folder / f".served_write_{i:03d}.tmp"
    temp.write_text(
        render_memory(f"## Situation\n- written {i} while served", {"experience_name": path.stem})
    )
    os.replace(temp, path)


def served_figures(root: Path, texts: list[str], agents: int, rounds: int = 3) -> dict[str, Any]:
    """Rounds of the queries in process and over HTTP taken in turn (so both see the same load),
    each figure the median of the rounds'."""
    in_process = InProcess(root, texts)
    proc, url = start_cli_server(["serve", str(root), "--port", "0", "--workers", str(max(4, agents))])
    try:
        with httpx.Client(base_url=url, timeout=300) as client:
            started = time.perf_counter()
            served_times(client, texts[:1])  # the server's index, built cold
            first_s = time.perf_counter() - started
            local, served = [], []
            for _ in range(rounds):
                local.append(in_process.times(texts))
                served.append(served_round(client, texts, proc.pid))
            health = health_times(client, len(texts))
            after_write = []
            for i in range(10):
                one_write(root, i)
                after_write += served_times(client, texts[i : i + 1])
            rss = rss_mib_of(proc.pid)
        started = time.perf_counter()
        runs = run_agents(url, agents)
        agents_s = time.perf_counter() - started
        rss_after = rss_mib_of(proc.pid)
    finally:
        stop(proc)
    failed = failures(runs)
    problems = ledger_problems(root, runs)

    def median_of_rounds(figure: Callable[[int], float]) -> float:
        return statistics.median(figure(i) for i in range(rounds))

    return {
        "served_rounds": rounds,
        "served_first_find_s": round(first_s, 2),
        "served_find_p50_ms": ms(median_of_rounds(lambda i: percentile(served[i].times, 0.5))),
        "served_find_p95_ms": ms(median_of_rounds(lambda i: percentile(served[i].times, 0.95))),
        "in_process_find_p50_ms": ms(median_of_rounds(lambda i: percentile(local[i], 0.5))),
        "in_process_find_p95_ms": ms(median_of_rounds(lambda i: percentile(local[i], 0.95))),
        "served_p95_to_in_process": round(
            median_of_rounds(lambda i: percentile(served[i].times, 0.95) / percentile(local[i], 0.95)), 2
        ),
        "served_p95_to_in_process_by_round": [
            round(percentile(done.times, 0.95) / percentile(times, 0.95), 2)
            for done, times in zip(served, local, strict=True)
        ],
        "served_find_breakdown_ms": breakdown(served, local, health),
        "served_find_after_one_write_ms": ms(statistics.median(after_write)),
        "server_rss_mib": round(rss, 1),
        "agents": agents,
        "agents_wall_s": round(agents_s, 2),
        "agent_median_s": round(statistics.median(r.seconds for r in runs), 2),
        "agents_failed": len(failed),
        "agents_lock_timeouts": sum("lock" in f.lower() for f in failed),
        "agents_uses_served": sum(len(r.served) for r in runs),
        "ledger_problems": len(problems),
        "ledger_problem_examples": problems[:3] + failed[:3],
        "server_rss_after_agents_mib": round(rss_after, 1),
        "goals": {"served_find_p95_ms": GOAL_P95_MS, "served_p95_to_in_process": GOAL_TO_IN_PROCESS},
    }


def report(figures: dict[str, Any]) -> str:
    f, b = figures, figures["served_find_breakdown_ms"]
    return (
        f"find over HTTP p50 {f['served_find_p50_ms']} ms p95 {f['served_find_p95_ms']} ms (goal ≤ "
        f"{GOAL_P95_MS:.0f} ms) vs in process p50 {f['in_process_find_p50_ms']} ms p95 "
        f"{f['in_process_find_p95_ms']} ms: {f['served_p95_to_in_process']}x (goal ≤ {GOAL_TO_IN_PROCESS}x); "
        f"after one write {f['served_find_after_one_write_ms']} ms; server {f['server_rss_mib']} MiB "
        f"(medians of {f['served_rounds']} rounds; by round {f['served_p95_to_in_process_by_round']})\n"
        f"a served find, p50 {b['total']} ms: route {b['server_route']} ms (find {b['server_find']} ms, "
        f"the rest {b['server_route_beyond_find']} ms), outside the route {b['outside_route']} ms (a "
        f"/health round trip {b['health_round_trip']} ms); CPU per find: server {b['server_cpu_per_find']} "
        f"ms, client {b['client_cpu_per_find']} ms; in process {b['in_process_find']} ms\n"
        f"{f['agents']} agents find → messages → commit at once: {f['agents_wall_s']} s, median "
        f"{f['agent_median_s']} s each; {f['agents_failed']} failed, {f['agents_lock_timeouts']} lock "
        f"timeouts; {f['agents_uses_served']} uses served, ledger problems {f['ledger_problems']}"
    )


def main() -> None:
    from retrieval import big_workspace, queries  # that bench imports this module: not at the top

    parser = argparse.ArgumentParser(description="find served over HTTP against the same search in process")
    parser.add_argument("--experiences", type=int, default=10_000)
    parser.add_argument("--trajectories", type=int, default=50_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3, help="served finds: rounds, median reported")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder, "big")
        big_workspace(root, args.experiences, args.trajectories)
        figures = served_figures(root, queries(args.queries), args.agents, args.rounds)
    print(report(figures))
    load = round(os.getloadavg()[0], 2)
    print(json.dumps({"bench": "retrieval_served", **figures, "load_average_1m": load}))


if __name__ == "__main__":
    main()
