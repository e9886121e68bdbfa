"""Once-only intake: a watcher SIGKILLed between writing an inbox rollout's trajectory and moving
the file to done/ does not train on it again when it restarts (real processes, a real kill)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from plan_support import temp_files
from workspace_support import build_sample_workspace, watch_until_inbox_empty

from ovtui.core.context import ExecutionContext
from ovtui.core.fileformat import parse_memory
from ovtui.environments.sample.agent import SampleAgentExecutor
from ovtui.environments.sample.generate import generate_cases
from ovtui.memory.intake import content_key, record_relpath
from ovtui.storage.fsio import CRASH_AT_ENV
from ovtui.wiring.workspace import Workspace

CONFIG = '[review]\npolicy = "all"\n[trainer]\nmax_wait_seconds = 0.2\n'


def _trajectories_of(ws: Path, case_name: str) -> list[str]:
    folder = ws / "memories" / "trajectories"
    return sorted(
        p.name
        for p in folder.glob("*.md")
        if parse_memory(p.read_text(encoding="utf-8"), source=p.name).fields.get("case_name") == case_name
    )


@pytest.mark.parametrize(
    "crash_at",
    [
        "intake_recorded",  # after the trajectory and the intake record were committed, before the move
        "temp:*_20[0-9][0-9]*.md",  # inside that commit: the journal finishes it on restart
    ],
)
def test_a_watcher_killed_between_trajectory_and_move_does_not_train_twice(
    tmp_path: Path, crash_at: str
) -> None:
    ws = build_sample_workspace(tmp_path / "ws")
    (ws / "ovtui.toml").write_text(CONFIG, encoding="utf-8")
    [case] = generate_cases("train", 1, seed=21)
    [rollout] = asyncio.run(
        SampleAgentExecutor().execute([case], Workspace(ws).reading.experiences(), ExecutionContext("intake"))
    )
    data = rollout.model_dump_json().encode("utf-8")
    dropped = ws / "inbox" / "rollouts" / "r1.json"
    dropped.write_bytes(data)

    killed = watch_until_inbox_empty(ws, env={CRASH_AT_ENV: crash_at})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert dropped.exists()  # killed before the move

    again = watch_until_inbox_empty(ws)
    assert again.returncode == 0, again.stderr
    assert not dropped.exists() and (ws / "inbox" / "done" / "r1.json").read_bytes() == data
    assert len(_trajectories_of(ws, case.name)) == 1  # one trajectory: the file was taken once
    assert (ws / record_relpath(content_key(data))).is_file()
    last_run = max((ws / "runs").iterdir(), key=lambda p: p.name)
    events = [
        json.loads(line) for line in (last_run / "events.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    taken = [e["data"] for e in events if e["kind"] == "inbox_processed"]
    assert taken and all(d["taken_before"] and d["file"] == "r1.json" for d in taken)  # said, not retrained
    assert temp_files(ws) == []


def test_a_second_copy_of_a_taken_file_is_not_trained_on(tmp_path: Path) -> None:
    ws = build_sample_workspace(tmp_path / "ws")
    (ws / "ovtui.toml").write_text(CONFIG, encoding="utf-8")
    [case] = generate_cases("train", 1, seed=22)
    [rollout] = asyncio.run(
        SampleAgentExecutor().execute([case], Workspace(ws).reading.experiences(), ExecutionContext("intake"))
    )
    inbox = ws / "inbox" / "rollouts"
    (inbox / "first.json").write_text(rollout.model_dump_json(), encoding="utf-8")
    assert watch_until_inbox_empty(ws).returncode == 0
    (inbox / "copy.json").write_text(rollout.model_dump_json(), encoding="utf-8")
    assert watch_until_inbox_empty(ws).returncode == 0
    assert sorted(p.name for p in (ws / "inbox" / "done").iterdir()) == ["copy.json", "first.json"]
    assert len(_trajectories_of(ws, case.name)) == 1
