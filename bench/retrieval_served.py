"""The served half of ``bench/retrieval.py``: ``find`` over loopback through a real ``ovtui serve``
against the same search in process (the facade's ``Workspace.find``, which the route calls: the
floor of serving it), the server's memory, and many agents at once on the workspace (find →
messages → commit), with the use ledger counted against what each agent was served.

A module of ``bench/retrieval.py``, not run on its own: its figures go into that bench's one JSON
line."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
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


def in_process_times(root: Path, texts: list[str]) -> list[float]:
    """The route's search without HTTP: the facade's find, warm."""

    async def run() -> list[float]:
        workspace = Workspace(root)
        visibility = workspace.visibility()
        await find_times(lambda query: workspace.find(query, visibility), texts[:1])  # builds the index
        return await find_times(lambda query: workspace.find(query, visibility), texts)

    return asyncio.run(run())


def served_times(client: httpx.Client, texts: list[str]) -> list[float]:
    times = []
    for text in texts:
        started = time.perf_counter()
        response = client.post("/api/v1/search/find", json={"query": text, "limit": 10})
        times.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise SystemExit(f"find over HTTP: {response.status_code} {response.text[:300]}")
    return times


def one_write(root: Path, i: int) -> None:
    """An experience written as the store writes (a rename into the folder)."""
    folder = root / "memories" / "experiences"
    path, temp = folder / f"served_write_{i:03d}.md", folder / f".served_write_{i:03d}.tmp"
    temp.write_text(
        render_memory(f"## Situation\n- written {i} while served", {"experience_name": path.stem})
    )
    os.replace(temp, path)


def served_figures(root: Path, texts: list[str], agents: int) -> dict[str, Any]:
    local = in_process_times(root, texts)
    proc, url = start_cli_server(["serve", str(root), "--port", "0", "--workers", str(max(4, agents))])
    try:
        with httpx.Client(base_url=url, timeout=300) as client:
            started = time.perf_counter()
            served_times(client, texts[:1])  # the server's index, built cold
            first_s = time.perf_counter() - started
            served = served_times(client, texts)
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
    p95, local_p95 = percentile(served, 0.95), percentile(local, 0.95)
    return {
        "served_first_find_s": round(first_s, 2),
        "served_find_p50_ms": ms(percentile(served, 0.5)),
        "served_find_p95_ms": ms(p95),
        "in_process_find_p50_ms": ms(percentile(local, 0.5)),
        "in_process_find_p95_ms": ms(local_p95),
        "served_p95_to_in_process": round(p95 / local_p95, 2),
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
    f = figures
    return (
        f"find over HTTP p50 {f['served_find_p50_ms']} ms p95 {f['served_find_p95_ms']} ms (goal ≤ "
        f"{GOAL_P95_MS:.0f} ms) vs in process p50 {f['in_process_find_p50_ms']} ms p95 "
        f"{f['in_process_find_p95_ms']} ms: {f['served_p95_to_in_process']}x (goal ≤ {GOAL_TO_IN_PROCESS}x); "
        f"after one write {f['served_find_after_one_write_ms']} ms; server {f['server_rss_mib']} MiB\n"
        f"{f['agents']} agents find → messages → commit at once: {f['agents_wall_s']} s, median "
        f"{f['agent_median_s']} s each; {f['agents_failed']} failed, {f['agents_lock_timeouts']} lock "
        f"timeouts; {f['agents_uses_served']} uses served, ledger problems {f['ledger_problems']}"
    )
