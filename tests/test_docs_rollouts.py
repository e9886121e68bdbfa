"""docs/rollouts.md stays true: its example is a valid Rollout, and the README links the page."""

from __future__ import annotations

import re
from pathlib import Path

from workspace_support import build_sample_workspace, kernel_of

from ovtui.core.domain import Rollout
from ovtui.wiring.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]


def test_the_example_is_a_complete_valid_rollout(tmp_path: Path) -> None:
    page = (REPO / "docs" / "rollouts.md").read_text(encoding="utf-8")
    [example] = re.findall(r"```json\n(.*?)```", page, re.S)
    rollout = Rollout.model_validate_json(example)
    assert rollout.evaluation is not None and rollout.messages and rollout.case.rubric.criteria
    # Without its evaluation, nothing in a workspace could grade this case: it would be quarantined.
    assert kernel_of(Workspace(build_sample_workspace(tmp_path / "ws"))).evaluator_for(rollout.case) is None


def test_the_readme_links_the_page() -> None:
    assert "(docs/rollouts.md)" in (REPO / "README.md").read_text(encoding="utf-8")
