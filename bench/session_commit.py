"""Session commit: time from ``POST …/commit`` to a written ``memory_diff.json`` over ``ovtui serve``
(offline backend, approve all), against the same commit in-process without HTTP (the floor,
measured in the same run); then 3 and 30 concurrent commits on one workspace: all complete, none
lost, no lock timeout, every extracted memory accounted for.

Run: ``.venv/bin/python bench/session_commit.py [--repeat N]``. Goal: commit → memory_diff ≤ 1 s
(OpenViking 0.5.2 takes ≥ 20 s for the same commit: two fixed 10 s batching windows). Model calls
per commit are 0 with the offline backend; the LLM backend's session extraction is not built yet,
so no "instant model" figure is printed. Ends with one JSON line of the figures (medians).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import httpx2 as httpx
from server_support import start_cli_server, stop
from session_support import CONVERSATION

from ovtui.cli_commands.init import init_workspace
from ovtui.context import RunContext
from ovtui.service import Workspace
from ovtui.sessions.commit import SessionCommitter
from ovtui.sessions.models import AddMessageRequest
from ovtui.sessions.store import SessionStore

GOAL_S = 1.0


def workspace(parent: Path, name: str) -> Path:
    root = parent / name
    init_workspace(root, sample=True)
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    return root


def in_process(root: Path, repeat: int) -> list[float]:
    async def run() -> list[float]:
        ws = Workspace(root)
        sessions = SessionStore(ws.paths)
        committer = SessionCommitter(ws, sessions, RunContext())
        times = []
        for i in range(repeat):
            messages = [
                AddMessageRequest.model_validate(m).to_stored(sessions.next_message_id())
                for m in CONVERSATION
            ]
            sessions.append(f"floor{i}", messages)  # the HTTP figure starts after the messages, too
            start = time.perf_counter()
            archive, archived = sessions.archive(f"floor{i}")
            await committer.commit_archive(archive, archived, sessions.meta(f"floor{i}").policy())
            times.append(time.perf_counter() - start)
        await committer.close()
        return times

    return asyncio.run(run())


def commit_and_wait(client: httpx.Client, session_id: str, root: Path) -> tuple[float, dict[str, Any]]:
    client.post(
        f"/api/v1/sessions/{session_id}/messages/batch", json={"messages": CONVERSATION}
    ).raise_for_status()
    start = time.perf_counter()
    accepted = client.post(f"/api/v1/sessions/{session_id}/commit").json()["result"]
    while True:
        task = client.get(f"/api/v1/tasks/{accepted['task_id']}", params={"wait": 10}).json()["result"]
        if task["status"] in ("completed", "failed"):
            break
    elapsed = time.perf_counter() - start
    diff = root / f"sessions/{session_id}/history/archive_001/memory_diff.json"
    task["diff_written"] = diff.is_file()
    return elapsed, task


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ovtui-bench-sessions-") as tmp:
        parent = Path(tmp)
        floor = statistics.median(in_process(workspace(parent, "floor"), args.repeat))
        root = workspace(parent, "served")
        proc, url = start_cli_server(["serve", str(root), "--port", "0", "--workers", "32"])
        try:
            with httpx.Client(base_url=url, timeout=120) as client:
                single = [commit_and_wait(client, f"one{i}", root)[0] for i in range(args.repeat)]
                concurrency: dict[str, Any] = {}
                for n in (3, 30):
                    start = time.perf_counter()
                    ids = [f"c{n}_{i}" for i in range(n)]
                    with ThreadPoolExecutor(n) as pool:
                        results = list(pool.map(lambda s: commit_and_wait(client, s, root), ids))
                    wall = time.perf_counter() - start
                    tasks = [t for _, t in results]
                    concurrency[str(n)] = {
                        "wall_s": round(wall, 3),
                        "completed": sum(t["status"] == "completed" for t in tasks),
                        "failed": sum(t["status"] == "failed" for t in tasks),
                        "diffs_written": sum(t["diff_written"] for t in tasks),
                        "lock_timeouts": sum("lock" in str(t.get("error") or "").lower() for t in tasks),
                        "cases_accounted": sum(
                            t["result"]["memories_extracted"].get("cases", 0) for t in tasks if t["result"]
                        ),
                        "median_commit_s": round(statistics.median(e for e, _ in results), 3),
                    }
        finally:
            stop(proc)
    median_single = statistics.median(single)
    print(
        f"commit -> memory_diff over HTTP: median {median_single * 1000:.0f} ms "
        f"(goal <= {GOAL_S * 1000:.0f} ms)"
    )
    print(
        f"same commit in-process (floor):  median {floor * 1000:.0f} ms; ratio {median_single / floor:.2f}x"
    )
    for n, figures in concurrency.items():
        print(f"{n:>2} concurrent commits: {figures}")
    print(
        json.dumps(
            {
                "bench": "session_commit",
                "commit_to_diff_s": round(median_single, 4),
                "in_process_floor_s": round(floor, 4),
                "ratio_to_floor": round(median_single / floor, 2),
                "goal_s": GOAL_S,
                "model_calls_per_commit_offline": 0,
                "concurrent": concurrency,
            }
        )
    )


if __name__ == "__main__":
    main()
