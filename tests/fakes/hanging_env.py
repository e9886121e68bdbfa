"""``python tests/fakes/hanging_env.py STATE_FOLDER N``: ``ovtui env serve sample`` whose executions
of the first N test cases never finish (each prints ``hang NAME``), to kill the service mid-run."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ovtui.context import ExecutionContext
from ovtui.domain import Case, ExperienceSet, Rollout
from ovtui.environments.sample import SampleEnvironment
from ovtui.environments.service import create_env_app
from ovtui.server.jobs import JobStore
from ovtui.server.run import run_server


class HangingSample(SampleEnvironment):
    def __init__(self, hang: int) -> None:
        super().__init__()
        self.hang = {c.name for c in self.cases("test")[:hang]}

    async def execute(self, case: Case, policy_set: ExperienceSet, context: ExecutionContext) -> Rollout:
        if case.name in self.hang:
            print(f"hang {case.name}", flush=True)
            await asyncio.Event().wait()
        return await super().execute(case, policy_set, context)


if __name__ == "__main__":
    store = JobStore(Path(sys.argv[1]), prefix="rollout_exec_")
    run_server(create_env_app(HangingSample(int(sys.argv[2])), store, workers=8), "127.0.0.1", 0)
