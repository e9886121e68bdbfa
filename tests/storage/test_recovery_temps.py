"""Recovery removes a dead writer's temp files in every folder ovtui writes: a real process is
SIGKILLed while a temp file of a write is on disk, and the next command's start-up removes it at
once (the writer's process id in the temp name says it is dead; no 60 s grace to wait out)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from plan_support import temp_files
from workspace_support import build_sample_workspace

from ovtui.memory.store import MemoryStore
from ovtui.storage.fsio import CRASH_AT_ENV, temp_writer, writer_alive
from ovtui.storage.journal import recover


def _ovtui(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ovtui", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    ("crash_at", "folder"),
    [
        ("temp:*_20[0-9][0-9]*.md", "memories/trajectories"),  # a trajectory (not journaled)
        ("temp:report.json", "runs"),  # a run's report
    ],
)
def test_a_killed_writers_temp_file_is_removed_when_the_next_command_starts(
    tmp_path: Path, crash_at: str, folder: str
) -> None:
    ws = build_sample_workspace(tmp_path / "ws")
    killed = _ovtui(
        "train", str(ws), "--limit", "1", "--epochs", "1", "--no-eval", env={CRASH_AT_ENV: crash_at}
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    left = temp_files(ws)
    assert len(left) == 1 and left[0].startswith(folder + "/"), left  # killed mid-write
    writer = temp_writer(Path(left[0]).name)
    assert writer is not None and not writer_alive(writer)  # the name says whose it was

    listed = _ovtui("history", "-w", str(ws))
    assert listed.returncode == 0, listed.stderr
    assert "removed 1 leftover temp file(s)" in listed.stderr
    assert temp_files(ws) == []


def test_a_live_writers_temp_file_is_kept(tmp_path: Path) -> None:
    """Recovery never pulls a temp file from under a writer that is still running."""
    ws = build_sample_workspace(tmp_path / "ws")
    sleeper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        live = ws / "memories" / "trajectories" / f".x_20260101000000.md.{sleeper.pid}-0123456789ab.tmp"
        live.write_text("half", encoding="utf-8")
        assert temp_writer(live.name) == sleeper.pid and writer_alive(sleeper.pid)
        store = MemoryStore.open(ws)
        with store.lock.hold("test"):
            report = recover(store.paths)
        assert live.exists() and not report.removed_temps
    finally:
        sleeper.communicate(b"")
    with store.lock.hold("test"):
        report = recover(store.paths)
    assert not live.exists() and report.removed_temps == [live.relative_to(ws).as_posix()]
