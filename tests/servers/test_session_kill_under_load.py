"""``ovtui serve`` SIGKILLed again and again under a concurrent load of appends and commits — at the
worst moments of a commit (its archive made, its task not yet recorded; before its commit point)
and at whatever moment the load reached — and after every restart, archives, tasks, metas and
memory_diffs agree, and no message is lost or doubled.

After each kill and restart (and the tasks the restart queued finished):

- every archive holds ``commit.json`` and its messages, and names a task the server knows;
- a task is completed exactly when its archive has a ``memory_diff.json``; one that is not says it
  was interrupted and how to submit it again;
- every commit the server accepted is the archive it answered, naming the task it answered;
- each session's meta counts its archives (``commit_count`` is the last archive's number);
- a session killed while its first message created it is no session: its folder holds only its lock;
- every message the server acknowledged is in exactly one place (an archive or the live file),
  one it never acknowledged in at most one, and every file reads whole.

At the end every interrupted archive is submitted again, and all of them complete.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2 as httpx
from server_support import start_cli_server, stop
from workspace_support import build_sample_workspace

from ovtui.sessions.session_files import LOCK

CLIENTS = 4
# Each round's kill: the server kills itself at the first commit reaching that step, or (None) it
# is SIGKILLed once the load has had a few more commits accepted.
KILLS = ["session_commit:live_replaced", "session_commit:archived", None, None]


class Load:
    """What the clients sent and what the server acknowledged."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.acked: set[str] = set()  # message tokens answered 200
        self.sent: set[str] = set()
        self.accepted: list[dict[str, Any]] = []  # commit answers
        self.commits = threading.Condition(self.lock)

    def client(self, url: str, session_id: str, prefix: str) -> None:
        with httpx.Client(base_url=url, timeout=30) as client:
            n = 0
            while True:
                tokens = [f"{prefix}-{n}-a", f"{prefix}-{n}-b"]
                n += 1
                with self.lock:
                    self.sent.update(tokens)
                batch = {"messages": [{"role": "user", "content": t} for t in tokens]}
                try:
                    added = client.post(f"/api/v1/sessions/{session_id}/messages/batch", json=batch)
                    if added.status_code == 200:
                        with self.lock:
                            self.acked.update(tokens)
                    keep = n % 3  # now and then a keep window
                    committed = client.post(
                        f"/api/v1/sessions/{session_id}/commit", json={"keep_recent_count": keep}
                    )
                except httpx.TransportError:
                    return  # the server was killed
                if committed.status_code == 200 and committed.json()["result"]["status"] == "accepted":
                    with self.commits:
                        self.accepted.append(committed.json()["result"])
                        self.commits.notify_all()

    def wait_for_commits(self, count: int) -> None:
        with self.commits:
            assert self.commits.wait_for(lambda: len(self.accepted) >= count, timeout=120), "the load stalled"


def _lines(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert not data or data.endswith(b"\n"), f"{path}: a torn last line"
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def _finish_all(client: httpx.Client) -> dict[str, dict[str, Any]]:
    tasks = {t["task_id"]: t for t in client.get("/api/v1/tasks", params={"limit": 1000}).json()["result"]}
    for task_id, task in tasks.items():
        while task["status"] in ("pending", "running"):
            task = client.get(f"/api/v1/tasks/{task_id}", params={"wait": 30}).json()["result"]
        tasks[task_id] = task
    return tasks


def check(root: Path, client: httpx.Client, load: Load) -> dict[str, dict[str, Any]]:
    tasks = _finish_all(client)
    where: Counter[str] = Counter()
    archives: dict[str, dict[str, Any]] = {}
    for session in sorted((root / "sessions").iterdir()):
        if not (session / "meta.json").exists():
            # Killed while its first message was creating it: the session lock made the folder, and a
            # session without its meta is none (the server does not list it); nothing else is there.
            assert {p.name for p in session.iterdir()} <= {LOCK}, session
            continue
        meta = json.loads((session / "meta.json").read_text())
        numbers = []
        for archive in sorted((session / "history").iterdir()) if (session / "history").exists() else []:
            numbers.append(int(archive.name.removeprefix("archive_")))
            record = json.loads((archive / "commit.json").read_text())
            archives[f"{session.name}/{archive.name}"] = record
            task = tasks.get(record["task_id"])
            assert task is not None, f"{archive}: its task {record['task_id']} is unknown"
            assert task["resource_id"] == session.name and task["archive"] == archive.name
            has_diff = (archive / "memory_diff.json").is_file()
            assert (task["status"] == "completed") == has_diff, (archive, task)
            if task["status"] == "failed":
                assert "interrupted" in task["error"] and "/resubmit" in task["error"], task
            messages = _lines(archive / "messages.jsonl")
            assert len(messages) == record["archived_messages"]
            where.update(m["parts"][0]["text"] for m in messages)
        assert meta["commit_count"] == max(numbers, default=0), session
        live = session / "messages.jsonl"
        if live.exists():
            where.update(m["parts"][0]["text"] for m in _lines(live))
    for answer in load.accepted:
        key = answer["archive_uri"].split("/sessions/", 1)[1].replace("/history/", "/")
        assert archives[key]["task_id"] == answer["task_id"], answer
    assert all(where[t] == 1 for t in load.acked), [t for t in load.acked if where[t] != 1]
    assert all(where[t] <= 1 for t in load.sent) and set(where) <= load.sent
    return tasks


def crash_at(point: str | None) -> dict[str, str]:
    return {"OVTUI_CRASH_AT": point} if point else {}


def test_kill_9_under_a_commit_load_leaves_every_archive_with_its_task(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace('policy = "ask"', 'policy = "all"'))
    load = Load()
    proc, url = start_cli_server(["serve", str(root), "--port", "0"], env=crash_at(KILLS[0]))
    try:
        for round_, kill in enumerate(KILLS):
            with ThreadPoolExecutor(CLIENTS) as pool:
                for i in range(CLIENTS):
                    pool.submit(load.client, url, f"s{i}", f"r{round_}-c{i}")
                if kill is None:
                    load.wait_for_commits(len(load.accepted) + 4 + 2 * round_)
                    proc.kill()  # whatever it was doing
                assert proc.wait(timeout=120) == -9
            stop(proc)
            following = KILLS[round_ + 1] if round_ + 1 < len(KILLS) else None
            proc, url = start_cli_server(["serve", str(root), "--port", "0"], env=crash_at(following))
            with httpx.Client(base_url=url, timeout=60) as client:
                tasks = check(root, client, load)

        with httpx.Client(base_url=url, timeout=60) as client:
            for task in tasks.values():
                if task["status"] == "failed":
                    route = f"/api/v1/sessions/{task['resource_id']}/archives/{task['archive']}/resubmit"
                    assert client.post(route).status_code == 200
            for archive in (root / "sessions").glob("*/history/*"):
                record = json.loads((archive / "commit.json").read_text())
                final = client.get(f"/api/v1/tasks/{record['task_id']}", params={"wait": 30}).json()["result"]
                assert final["status"] == "completed", final
                assert (archive / "memory_diff.json").is_file()
    finally:
        stop(proc)
