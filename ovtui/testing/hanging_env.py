"""``python -m ovtui.testing.hanging_env STATE_FOLDER N [SPLIT]``: ``ovtui env serve sample`` whose
executions of the first N cases of SPLIT (default test) never finish (each prints ``hang NAME``),
to kill the service mid-run.
Every other execution prints ``done NAME`` once its result is in the job store."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet, Rollout
from ovtui.environments.sample.environment import SampleEnvironment
from ovtui.servers.base.run import run_server
from ovtui.servers.benchmark import create_env_app
from ovtui.storage.jobs import JobStore


class HangingSample(SampleEnvironment):
    def __init__(self, hang: int, split: str) -> None:
        super().__init__()
        self.hang = {c.name for c in self.cases(split)[:hang]}

    async def execute(self, case: Case, policy_set: ExperienceSet, context: ExecutionContext) -> Rollout:
        if case.name in self.hang:
            print(f"hang {case.name}")
            await asyncio.Event().wait()
        rollout = await super().execute(case, policy_set, context)
        # Runs after this task's current step, i.e. after the pool stored the result.
        asyncio.get_running_loop().call_soon(print, f"done {case.name}")
        return rollout


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    store = JobStore(Path(sys.argv[1]), prefix="rollout_exec_")
    run_server(
        create_env_app(
            HangingSample(int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "test"), store, workers=8
        ),
        "127.0.0.1",
        0,
    )
