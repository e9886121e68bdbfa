"""Running ``ovtui`` as a user does: a real process, with the interpreter of this test run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_ovtui(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("NO_COLOR", None)
    return subprocess.run(
        [sys.executable, "-m", "ovtui", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
