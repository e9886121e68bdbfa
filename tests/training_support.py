"""Train and evaluate through the product's own path, for the learning tests.

``train`` runs ``Workspace.train`` (registry → pipeline → engine → updater, files, journal and
history) on a fresh sample workspace holding the given starting experiences and cases, and returns
what the workspace holds afterwards. ``evaluate`` runs the sample workspace's executor, the sample
agent, which grades each rollout. No copy of the training loop lives in the tests.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from workspace_support import build_sample_workspace, memory_of, pristine_sample

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet, Rollout
from ovtui.core.experience_files import file_from_experience
from ovtui.environments.sample.agent import SampleAgentExecutor
from ovtui.environments.sample.generate import write_cases
from ovtui.memory.types import EXPERIENCES
from ovtui.train.reports import RunReport
from ovtui.wiring.workspace import TrainOptions, Workspace

DATASET = "under_test"


def accuracy(rollouts: list[Rollout]) -> float:
    return sum(bool(r.evaluation and r.evaluation.passed) for r in rollouts) / max(len(rollouts), 1)


def evaluate(cases: list[Case], policy_set: ExperienceSet) -> list[Rollout]:
    """The sample agent on ``cases`` under ``policy_set``: graded rollouts."""
    context = ExecutionContext(policy_snapshot_id="evaluate", stage="eval")
    return SampleAgentExecutor().execute_sync(cases, policy_set, context)


def sample_start() -> ExperienceSet:
    """The starter experiences ``ovtui init --sample`` writes."""
    return Workspace(pristine_sample()).reading.experiences()


def train(
    cases: list[Case], start: ExperienceSet, *, epochs: int = 3, batch_size: int = 8
) -> tuple[ExperienceSet, RunReport]:
    """``ovtui train --approve all --no-eval`` on ``cases`` from ``start``; the experiences after it."""
    with tempfile.TemporaryDirectory() as folder:
        workspace = Workspace(seeded_workspace(Path(folder) / "ws", cases, start))
        options = TrainOptions(
            dataset=DATASET, epochs=epochs, batch_size=batch_size, approve="all", eval_split=None
        )
        report = asyncio.run(workspace.runs.train(options))
        assert report.errors == [], report.errors
        return workspace.reading.experiences(), report


def seeded_workspace(root: Path, cases: list[Case], start: ExperienceSet) -> Path:
    """A sample workspace whose experiences are ``start`` and whose dataset holds ``cases``."""
    build_sample_workspace(root)
    workspace = Workspace(root)
    folder = memory_of(workspace).type_dir(EXPERIENCES)
    shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for experience in start.policies:
        memory = file_from_experience(experience)
        (folder / f"{experience.name}.md").write_text(memory.render(), encoding="utf-8")
    write_cases(memory_of(workspace).paths.datasets / DATASET / "train.jsonl", cases)
    return root
