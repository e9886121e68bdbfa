"""Many agents on one workspace at once, as OpenViking clients drive ``ovtui serve``: each searches
its memories for its session, sends its conversation, commits and waits for the commit's task;
then what the use ledger holds is counted against what each agent was served. Used by the test of
concurrent agents and by ``bench/retrieval.py``."""

from __future__ import annotations

import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
from session_support import CONVERSATION

from ovtui.memory.ledger_state import Outcome, Use, parse, session_consumer
from ovtui.storage.paths import LEDGER_LOG_FILE
from ovtui.wiring.workspace import Workspace

QUERY = "cancel my order and tell me when the refund arrives"


@dataclass(frozen=True)
class AgentRun:
    session_id: str
    served: tuple[str, ...]  # the URIs its search returned, in order
    task: dict[str, Any]  # the commit's task as the last poll saw it
    seconds: float  # search → commit done


def _result(response: httpx.Response) -> Any:
    body = response.json()
    if response.status_code != 200 or body.get("status") != "ok":
        raise AssertionError(f"{response.request.url.path}: {response.status_code} {body}")
    return body["result"]


def run_agent(client: httpx.Client, session_id: str, query: str = QUERY) -> AgentRun:
    """find → add messages → commit, then the commit's task polled (long-polls, no sleeps)."""
    started = time.perf_counter()
    found = _result(
        client.post("/api/v1/search/search", json={"query": query, "session_id": session_id, "limit": 5})
    )
    served = tuple(hit["uri"] for hit in found["memories"])
    _result(client.post(f"/api/v1/sessions/{session_id}/messages/batch", json={"messages": CONVERSATION}))
    task_id = _result(client.post(f"/api/v1/sessions/{session_id}/commit"))["task_id"]
    while True:
        task: dict[str, Any] = _result(client.get(f"/api/v1/tasks/{task_id}", params={"wait": 30}))
        if task["status"] in ("completed", "failed"):
            return AgentRun(session_id, served, task, time.perf_counter() - started)


def run_agents(url: str, count: int, *, prefix: str = "agent") -> list[AgentRun]:
    """``count`` agents at once, each on its own connection and session."""

    def one(i: int) -> AgentRun:
        with httpx.Client(base_url=url, timeout=300) as client:
            return run_agent(client, f"{prefix}{i:03d}")

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(one, range(count)))


def _log_records(root: Path) -> list[Use | Outcome]:
    log = root / LEDGER_LOG_FILE
    lines = log.read_bytes().splitlines() if log.is_file() else []
    return [record for line in lines if line for record in parse(json.loads(line))[0]]


def ledger_problems(root: Path, runs: list[AgentRun]) -> list[str]:
    """What the ledger gets wrong about the runs: each served memory must be one use of the
    agent's session in the log (no more, no fewer), each commit one outcome of it, and the
    ledger's own reading (``Workspace.memory_uses``) must count each memory's uses and sessions as
    the agents were served them. Empty: all recorded exactly once."""
    problems = []
    records = _log_records(root)
    uses = Counter((r.consumer, r.uri) for r in records if isinstance(r, Use) and r.via == "search")
    outcomes = Counter(r.consumer for r in records if isinstance(r, Outcome))
    for run in runs:
        consumer = session_consumer(run.session_id)
        for uri in run.served:
            if uses[consumer, uri] != 1:
                problems.append(f"{run.session_id}: {uri} recorded {uses[consumer, uri]} times, not once")
        recorded = sum(n for (who, _), n in uses.items() if who == consumer)
        if recorded != len(run.served):
            problems.append(f"{run.session_id}: {recorded} uses recorded for {len(run.served)} served")
        if outcomes[consumer] != 1:
            problems.append(f"{run.session_id}: {outcomes[consumer]} outcomes recorded, not one")
    usage = Workspace(root).reading.memory_uses()
    served = Counter(uri for run in runs for uri in run.served)
    for uri, times in served.items():
        got = usage.get(uri)
        if got is None or (got.count, got.sessions) != (times, times):
            shown = None if got is None else (got.count, got.sessions)
            problems.append(f"{uri}: ledger reads (uses, sessions) {shown}, served {times} times")
    return problems


def failures(runs: list[AgentRun]) -> list[str]:
    """Each agent whose commit did not complete, with its error."""
    return [
        f"{r.session_id}: {r.task['status']} {r.task.get('error')}"
        for r in runs
        if r.task["status"] != "completed"
    ]
