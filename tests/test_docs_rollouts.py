"""docs/rollouts.md stays true: its example is a valid Rollout that teaches the rule the page says, its
check command works, and the README links the page."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

from workspace_support import build_sample_workspace, kernel_of

from ovtui.core.domain import Rollout
from ovtui.core.events import Event
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


def example_rollout() -> str:
    page = (REPO / "docs" / "rollouts.md").read_text(encoding="utf-8")
    [example] = re.findall(r"```json\n(.*?)```", page, re.S)
    return str(example)


async def test_the_example_teaches_the_rule_the_page_says(tmp_path: Path) -> None:
    """Dropped into a sample workspace's inbox, the example is trained on and proposes a rule."""
    workspace = Workspace(build_sample_workspace(tmp_path / "ws"))
    workspace.config.trainer.max_wait_seconds = 0.5  # the streaming batch flushes soon after the file
    (workspace.root / "inbox" / "rollouts" / "example.json").write_text(example_rollout(), encoding="utf-8")
    stop = asyncio.Event()
    processed: list[Event] = []

    def listen(event: Event) -> None:
        if event.kind == "inbox_processed":
            processed.append(event)
            stop.set()

    report = await asyncio.wait_for(workspace.runs.stream([listen], stop, approve="all"), timeout=120)
    assert [e.data["gradients"] for e in processed] == [1] and report.history_ids
    learned = "\n".join(e.content for e in workspace.reading.experiences().policies)
    assert "ALWAYS call get_customer before update_address" in learned


def test_the_pages_check_command_checks_the_example(tmp_path: Path) -> None:
    page = (REPO / "docs" / "rollouts.md").read_text(encoding="utf-8")
    [command] = re.findall(r"```sh\n(python -c .*?) my_rollout.json\n```", page, re.S)
    (tmp_path / "my_rollout.json").write_text(example_rollout(), encoding="utf-8")
    script = shlex.split(command)[2]
    done = subprocess.run(
        [sys.executable, "-c", script, "my_rollout.json"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_the_check_command_refuses_a_score_outside_0_to_1(tmp_path: Path) -> None:
    """The page says a score is 0–1: 7 is refused, and the error names the field."""
    page = (REPO / "docs" / "rollouts.md").read_text(encoding="utf-8")
    [command] = re.findall(r"```sh\n(python -c .*?) my_rollout.json\n```", page, re.S)
    rollout = json.loads(example_rollout())
    rollout["evaluation"]["score"] = 7
    (tmp_path / "my_rollout.json").write_text(json.dumps(rollout), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", shlex.split(command)[2], "my_rollout.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "evaluation.score" in done.stderr
    assert "less than or equal to 1" in done.stderr
