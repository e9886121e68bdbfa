"""Running ``ovtui`` as a user does: a real process, with the interpreter of this test run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_ovtui(
    *args: str,
    cwd: Path,
    timeout: float = 240,
    also_installed: Path | None = None,
    env: dict[str, str] | None = None,
    answer: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``also_installed``: a folder of packages this process sees as installed (on PYTHONPATH);
    ``env``: variables set for this process on top of the test's own; ``answer``: its stdin."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    env.pop("NO_COLOR", None)
    if also_installed is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(also_installed), env.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "ovtui", *args],
        cwd=cwd,
        env=env,
        input=answer,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
