"""A real full disk (a small tmpfs) and a real read-only workspace (a read-only bind mount), where
the machine lets the test mount them (root, or a container allowed to): skipped otherwise.

Disk full during ``train`` is one line; the reading commands still work on the full disk; once
there is room again the next opening finishes the interrupted apply and every file is whole. On
a read-only workspace the reading commands work and the writing ones say so in one line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import run_ovtui

from ovtui.checks.workspace import check_workspace
from ovtui.wiring.workspace import memory_to_check

READING = (["check"], ["history"], ["review", "list", "-w"])
ROOMS = (128, 96, 112, 144, 80)  # KiB of room left on the disk, tried in turn


def _mount(*args: str) -> bool:
    if shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", *args], capture_output=True, timeout=30).returncode == 0


@pytest.fixture
def mounted(tmp_path: Path) -> Iterator[list[Path]]:
    """Where the test mounted something, unmounted at the end (innermost first)."""
    points: list[Path] = []
    yield points
    for point in reversed(points):
        subprocess.run(["umount", "-l", str(point)], capture_output=True, timeout=30)


def _one_line(done: subprocess.CompletedProcess[str], cause: str) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("ovtui: error: ")]
    assert len(errors) == 1 and f": {cause}" in errors[0], done.stderr


def _fill(disk: Path, leave: int) -> Path:
    """A file that takes all the free space of ``disk`` but ``leave`` bytes."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with filler.open("wb") as handle:
        handle.truncate(0)
        handle.write(b"\0" * max(0, free - leave))
    return filler


def test_a_full_disk_during_train_is_one_line_and_the_apply_completes_once_there_is_room(
    tmp_path: Path, mounted: list[Path]
) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _mount("-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)):
        pytest.skip("this machine does not let the test mount a tmpfs")
    mounted.append(disk)
    # How much room a run finds decides where it stops; with these it stops inside an apply, its
    # journal written and its files not (which room does that depends on the sizes of the files).
    for room in ROOMS:
        ws = disk / f"ws-{room}"
        assert run_ovtui("init", str(ws), "--sample", cwd=tmp_path, timeout=60).returncode == 0
        filler = _fill(disk, leave=room * 1024)
        done = run_ovtui("train", str(ws), "--epochs", "2", "--approve", "all", cwd=tmp_path, timeout=240)
        _one_line(done, "No space left on device")
        interrupted = list((ws / ".ovtui/journal").glob("*.json"))
        for command in READING:  # on the full disk, with the interrupted apply in its journal
            reading = run_ovtui(*command, str(ws), cwd=tmp_path, timeout=60)
            assert reading.returncode == 0 and "Traceback" not in reading.stderr, reading.stderr
        filler.unlink()
        if interrupted:
            break
        shutil.rmtree(ws)
    assert interrupted, f"no run stopped inside an apply with {ROOMS} KiB of room"
    store, recovered = memory_to_check(ws)  # with room again: the journal is finished
    assert recovered is not None and "completed 1 interrupted apply" in recovered
    assert list((ws / ".ovtui/journal").glob("*.json")) == []
    assert check_workspace(store).problems == []
    assert list(ws.rglob(".*.tmp")) == []
    again = run_ovtui("train", str(ws), "--epochs", "1", "--approve", "all", cwd=tmp_path, timeout=240)
    assert again.returncode == 0, again.stderr


def test_a_read_only_workspace_reads_and_refuses_writes_in_one_line(
    tmp_path: Path, mounted: list[Path]
) -> None:
    ws, view = tmp_path / "ws", tmp_path / "view"
    assert run_ovtui("init", str(ws), "--sample", cwd=tmp_path, timeout=60).returncode == 0
    trained = run_ovtui("train", str(ws), "--epochs", "1", "--approve", "ask", cwd=tmp_path, timeout=240)
    assert trained.returncode == 0, trained.stderr
    view.mkdir()
    if not _mount("--bind", str(ws), str(view)):
        pytest.skip("this machine does not let the test bind-mount a folder")
    mounted.append(view)
    if not _mount("-o", "remount,ro,bind", str(view)):
        pytest.skip("this machine does not let the test make a mount read-only")
    for command in READING:
        reading = run_ovtui(*command, str(view), cwd=tmp_path, timeout=60)
        assert reading.returncode == 0 and "Traceback" not in reading.stderr, reading.stderr
    plan = run_ovtui("review", "list", "-w", str(view), "--json", cwd=tmp_path, timeout=60)
    assert '"plan_id"' in plan.stdout
    _one_line(
        run_ovtui("train", str(view), "--epochs", "1", cwd=tmp_path, timeout=120), "Read-only file system"
    )
