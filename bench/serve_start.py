"""How long ``ovtui serve`` takes to come up: wall and CPU seconds from the start of the process to
its first ``/health`` answer (median of several starts), against the floor of the same interpreter
loading the CLI (``ovtui --help``); then what the first ``/mcp`` request costs (it builds the MCP
server and imports its SDK) next to the second. One JSON line at the end.

    python bench/serve_start.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx2 as httpx

TICKS_PER_S = os.sysconf("SC_CLK_TCK")
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def cpu_s_of(pid: int) -> float:
    """User + system CPU seconds the process has spent so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_S


def wait_for_health(url: str, proc: subprocess.Popen[str]) -> None:
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            if proc.poll() is not None:
                raise SystemExit(f"ovtui serve ended: {proc.stderr.read() if proc.stderr else ''}") from None


def mcp_request_s(url: str) -> float:
    started = time.perf_counter()
    answer = httpx.post(f"{url}/mcp", json=INITIALIZE, headers=MCP_HEADERS, timeout=60)
    elapsed = time.perf_counter() - started
    if answer.status_code != 200 or '"serverInfo"' not in answer.text:
        raise SystemExit(f"/mcp answered {answer.status_code}: {answer.text[:200]}")
    return elapsed


def one_start(workspace: Path) -> dict[str, float]:
    """One ``ovtui serve``: its start (wall, CPU) to the first /health answer, then two /mcp requests."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ovtui", "serve", str(workspace), "--port", "0", "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise SystemExit(f"ovtui serve did not start: {url!r}")
        wait_for_health(url, proc)
        start_wall, start_cpu = time.perf_counter() - started, cpu_s_of(proc.pid)
        first_mcp = mcp_request_s(url)
        first_mcp_cpu = cpu_s_of(proc.pid) - start_cpu
        second_mcp = mcp_request_s(url)
        return {
            "start_wall_s": start_wall,
            "start_cpu_s": start_cpu,
            "first_mcp_s": first_mcp,
            "first_mcp_cpu_s": first_mcp_cpu,
            "second_mcp_s": second_mcp,
        }
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


def floor_start() -> dict[str, float]:
    """The interpreter and the CLI alone: ``ovtui --help``, wall and CPU to its end."""
    before = os.times()
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ovtui", "--help"], check=True, capture_output=True)
    wall = time.perf_counter() - started
    after = os.times()
    return {
        "wall_s": wall,
        "cpu_s": (after.children_user - before.children_user)
        + (after.children_system - before.children_system),
    }


def median_of(runs: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(run[key] for run in runs), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="ovtui-serve-start-") as tmp:
        workspace = Path(tmp) / "ws"
        subprocess.run(
            [sys.executable, "-m", "ovtui", "init", str(workspace)], check=True, capture_output=True
        )
        floors = [floor_start() for _ in range(runs)]
        starts = [one_start(workspace) for _ in range(runs)]
    figures = {
        "bench": "serve_start",
        "runs": runs,
        "floor_cli_wall_s": median_of(floors, "wall_s"),
        "floor_cli_cpu_s": median_of(floors, "cpu_s"),
        **{key: median_of(starts, key) for key in starts[0]},
    }
    figures["start_cpu_over_floor"] = round(figures["start_cpu_s"] / figures["floor_cli_cpu_s"], 2)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
