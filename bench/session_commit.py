"""Session commit: time from ``POST …/commit`` to a written ``memory_diff.json`` over ``ovtui serve``
(approve all), against the same commit in-process without HTTP (the floor, measured in the same
run); then 3 and 30 concurrent commits on one workspace: all complete, none lost, no lock timeout,
every extracted case accounted for. Twice: with the offline backend, and with the LLM backend
against a local model that answers instantly (the fake OpenAI-compatible server of the tests, in
this process on 127.0.0.1, scripted with a realistic answer for every stage), which also counts
the model calls per commit — the session extraction's (from the task results) and all stages'
(the requests the server saw: the extraction, then the training of the commit's case).

Run: ``.venv/bin/python bench/session_commit.py [--repeat N]``. Goal: commit → memory_diff ≤ 1 s
(OpenViking 0.5.2 takes ≥ 20 s for the same commit: two fixed 10 s batching windows). Ends with
one JSON line of both backends' figures (medians).
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

from ovtui.cli.init import init_workspace
from ovtui.core.context import RunContext
from ovtui.protocols.sessions import AddMessageRequest
from ovtui.testing.openai_server import FakeOpenAIServer
from ovtui.testing.session_model import SessionModel
from ovtui.wiring.workspace import Workspace

GOAL_S = 1.0


def workspace(parent: Path, name: str, model_url: str | None) -> Path:
    """A sample workspace approving every plan; with ``model_url``, the LLM backend on it."""
    root = parent / name
    init_workspace(root, sample=True)
    config = root / "ovtui.toml"
    text = config.read_text().replace('policy = "ask"', 'policy = "all"')
    if model_url is not None:
        text = text.replace('backend = "offline"', f'backend = "openai"\nbase_url = "{model_url}"')
        if f'base_url = "{model_url}"' not in text:
            raise SystemExit(f"{config}: no [llm] backend line to switch to the model")
    config.write_text(text)
    return root


def in_process(root: Path, repeat: int) -> list[float]:
    async def run() -> list[float]:
        ws = Workspace(root)
        sessions = ws.parts.sessions
        committer = ws.parts.session_committer(RunContext())
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


def concurrent(client: httpx.Client, root: Path, n: int) -> dict[str, Any]:
    start = time.perf_counter()
    ids = [f"c{n}_{i}" for i in range(n)]
    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(lambda s: commit_and_wait(client, s, root), ids))
    wall = time.perf_counter() - start
    tasks = [t for _, t in results]
    return {
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


def measure(parent: Path, label: str, repeat: int, model: FakeOpenAIServer | None) -> dict[str, Any]:
    """One backend's figures: the in-process floor, single commits over HTTP, then concurrency."""
    url = model.base_url if model is not None else None
    floor = statistics.median(in_process(workspace(parent, f"floor_{label}", url), repeat))
    root = workspace(parent, f"served_{label}", url)
    proc, served = start_cli_server(["serve", str(root), "--port", "0", "--workers", "32"])
    try:
        with httpx.Client(base_url=served, timeout=120) as client:
            asked = len(model.chat_requests) if model is not None else 0
            singles = [commit_and_wait(client, f"one{i}", root) for i in range(repeat)]
            all_calls = (len(model.chat_requests) - asked) / repeat if model is not None else 0.0
            runs = {str(n): concurrent(client, root, n) for n in (3, 30)}
    finally:
        stop(proc)
    single = statistics.median(e for e, _ in singles)
    extraction = [t["result"]["token_usage"]["model_calls"] for _, t in singles if t["result"]]
    failed = [t["error"] for _, t in singles if t["status"] != "completed"]
    if failed:
        raise SystemExit(f"{label}: commits failed: {failed[:3]}")
    return {
        "commit_to_diff_s": round(single, 4),
        "in_process_floor_s": round(floor, 4),
        "ratio_to_floor": round(single / floor, 2),
        "extraction_calls_per_commit": statistics.median(extraction),
        "model_calls_per_commit": round(all_calls, 2),
        "concurrent": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ovtui-bench-sessions-") as tmp:
        parent = Path(tmp)
        figures = {"offline": measure(parent, "offline", args.repeat, None)}
        with FakeOpenAIServer(SessionModel()) as model:
            figures["instant_model"] = measure(parent, "model", args.repeat, model)
    for label, f in figures.items():
        print(
            f"[{label}] commit -> memory_diff over HTTP: median {f['commit_to_diff_s'] * 1000:.0f} ms "
            f"(goal <= {GOAL_S * 1000:.0f} ms); in-process floor {f['in_process_floor_s'] * 1000:.0f} ms, "
            f"ratio {f['ratio_to_floor']:.2f}x"
        )
        print(
            f"[{label}] model calls per commit: {f['extraction_calls_per_commit']} for the extraction, "
            f"{f['model_calls_per_commit']} in all (the case's training included)"
        )
        for n, run in f["concurrent"].items():
            print(f"[{label}] {n:>2} concurrent commits: {run}")
    print(json.dumps({"bench": "session_commit", "goal_s": GOAL_S, **figures}))


if __name__ == "__main__":
    main()
