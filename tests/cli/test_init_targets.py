"""``ovtui init`` on a target that cannot become a workspace says why in one line, and changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import run_ovtui


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("/etc/passwd", "/etc/passwd is a file, not a folder"),
        ("/proc/self", "/proc/self is in /proc, a system folder of the kernel"),
        ("/sys/kernel", "/sys/kernel is in /sys, a system folder of the kernel"),
        ("{tmp}/a_file/below", "a_file/below: Not a directory"),  # said from where one stands
        ("{tmp}/ws", "{tmp}/ws is already a workspace: nothing was changed"),
    ],
)
def test_init_of_a_target_that_cannot_be_a_workspace_is_one_line(
    tmp_path: Path, target: str, why: str
) -> None:
    (tmp_path / "a_file").write_text("not a folder")
    (tmp_path / "ws" / "memories").mkdir(parents=True)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    done = run_ovtui("init", target.format(tmp=tmp_path), cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (
        done.stderr.startswith(f"ovtui: error: {why.format(tmp=tmp_path)}") and done.stderr.count("\n") == 1
    )
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
