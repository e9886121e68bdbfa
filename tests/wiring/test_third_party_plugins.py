"""Plug-ins from a separate, installed package that describe themselves and read their own table:
a configured environment and a model-free backend that replaces one seam of the offline learner.
A real ``ovtui train`` and ``ovtui check`` see them; the report, the run's events and what the
apply was learned against name the backend; no model is ever called."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_ovtui
from plugin_support import install_distribution

from ovtui.cli.init import init_workspace
from ovtui.core import plugins
from ovtui.core.context import RunContext
from ovtui.testing.openai_server import FakeOpenAIServer
from ovtui.wiring.workspace import Workspace

DICE_DESK = '''
    """A desk that rolls dice on request: right only when it called its tool; its table's
    ``sides`` says how many dice it has (cases per split, and which cases it can take)."""

    from typing import ClassVar

    from pydantic import Field

    from ovtui.plugins import (
        Case, CriterionResult, EnvironmentDefaults, Message, PluginConfig, Rollout, Rubric,
        RubricCriterion, RubricEvaluation, TextPart, ToolPart, check_split,
    )

    ROLL = "roll_die"


    class DeskConfig(PluginConfig):
        TABLE: ClassVar[str] = "dicedesk"

        sides: int = Field(6, ge=2, le=20)


    def roll_case(split, number):
        return Case(
            name=f"dice_roll_{split}_{number}",
            task_signature="dice_roll",
            input={"user_query": f"Please roll die number {number} for me."},
            rubric=Rubric(
                name="dice_roll",
                criteria=[
                    RubricCriterion(
                        name="rolls_the_die", description="the die is rolled",
                        metadata={"kind": "required_call", "tool": ROLL},
                    )
                ],
            ),
        )


    class DiceDesk(EnvironmentDefaults):
        name = "dicedesk"

        def __init__(self, sides):
            self.sides = sides
            self.description = f"a desk of {sides}-sided dice"

        def splits(self):
            return ["train", "test"]

        def cases(self, split):
            check_split(self, split)
            return [roll_case(split, n) for n in range(self.sides)]

        async def execute(self, case, policy_set, context):
            knows = any(ROLL in e.content for e in policy_set.policies)
            messages = [Message(role="user", parts=[TextPart(text=case.input["user_query"])])]
            if knows:
                call = ToolPart(tool_id="t1", tool_name=ROLL, tool_input={}, tool_output="4")
                messages.append(Message(role="assistant", parts=[call]))
            messages.append(Message(role="assistant", parts=[TextPart(text="Done.")]))
            rollout = Rollout(case=case, messages=messages, policy_snapshot_id=context.policy_snapshot_id)
            rollout.evaluation = await self.evaluate(rollout)
            return rollout

        def case_problems(self, case):
            number = int(case.name.rsplit("_", 1)[-1])
            return [] if number < self.sides else [f"die {number} is not on a {self.sides}-sided desk"]

        async def evaluate(self, rollout):
            called = any(p.tool_name == ROLL for m in rollout.messages for p in m.tool_parts)
            feedback = [] if called else [f"{ROLL} was never called"]
            result = CriterionResult(
                criterion_name="rolls_the_die", passed=called, score=float(called), feedback=feedback
            )
            return RubricEvaluation(
                passed=called, score=float(called), criterion_results=[result], feedback=feedback
            )


    def environment(config=None):
        return DiceDesk(config.table(DeskConfig).sides if config is not None else DeskConfig().sides)
'''

DICE_BRAIN = '''
    """The offline learner with its merger replaced alone: every merge is tallied, then done by
    the offline merger it wraps. It calls no model."""

    from ovtui.plugins import Backend


    class TallyingMerger:
        label = "dice"

        def __init__(self, inner, tally):
            self.inner, self.tally = inner, tally

        async def merge(self, gradients, policy_set, similar):
            with self.tally.open("a", encoding="utf-8") as out:
                out.write(f"{len(gradients)}\\n")
            return await self.inner.merge(gradients, policy_set, similar)


    def build(resources):
        offline = resources.backend("offline").build(resources)
        tally = resources.paths.root / "merges.txt"
        return offline.replaced(merger=TallyingMerger(offline.merger, tally))


    backend = Backend(label="dice-brain", uses_model=False, build=build, description="merges tallied")
'''

ENTRY_POINTS = {
    "ovtui.environments": {"dicedesk": "dice_desk.environment:environment"},
    "ovtui.backends": {"dice-brain": "dice_desk.brain:backend"},
    "ovtui.config": {"dicedesk": "dice_desk.environment:DeskConfig"},
}


def _workspace(tmp_path: Path, base_url: str, sides: str) -> Path:
    root = tmp_path / "ws"
    init_workspace(root)
    (root / "ovtui.toml").write_text(
        '[trainer]\nenvironment = "dicedesk"\nagent = "dicedesk"\ndataset = "dice"\n\n'
        f'[llm]\nbackend = "dice-brain"\nbase_url = "{base_url}"\nmax_retries = 0\n\n'
        f"[dicedesk]\nsides = {sides}\n",
        encoding="utf-8",
    )
    return root


def _cases(root: Path, site: Path, cwd: Path) -> None:
    (root / "datasets/dice").mkdir(parents=True)
    # The desk's held-out cases are the dataset's validation split: what training scores.
    for split, named in (("train", "train"), ("test", "validation")):
        listed = run_ovtui("env", "cases", "dicedesk", "--split", split, cwd=cwd, also_installed=site)
        assert listed.returncode == 0, listed.stderr
        (root / f"datasets/dice/{named}.jsonl").write_text(listed.stdout, encoding="utf-8")


def _one(root: Path, pattern: str) -> Path:
    [path] = root.glob(pattern)
    return path


def test_a_configured_environment_and_a_model_free_backend_from_another_package(tmp_path: Path) -> None:
    files = {"environment.py": DICE_DESK, "brain.py": DICE_BRAIN}
    site = install_distribution(tmp_path / "site", "dice_desk", files, ENTRY_POINTS)
    with FakeOpenAIServer() as model:  # answers nothing: no request may reach it
        # check validates the plug-in's own table with its model, at the key's line.
        root = _workspace(tmp_path, model.base_url, '"six"')
        checked = run_ovtui("check", str(root), cwd=tmp_path, also_installed=site)
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert "ovtui.toml:12: [dicedesk.sides] Input should be a valid integer" in checked.stdout

        (root / "ovtui.toml").write_text(
            (root / "ovtui.toml").read_text(encoding="utf-8").replace('"six"', "3"), encoding="utf-8"
        )
        # Cases listed outside a workspace come from the desk's defaults (6 dice); in this
        # workspace, whose table says 3, check names each die the desk does not have.
        _cases(root, site, tmp_path)
        checked = run_ovtui("check", str(root), cwd=tmp_path, also_installed=site)
        assert checked.returncode == 1, checked.stdout + checked.stderr
        assert "datasets/dice/validation.jsonl:4: die 3 is not on a 3-sided desk" in checked.stdout
        for split in ("train", "validation"):
            cases = root / f"datasets/dice/{split}.jsonl"
            cases.write_text(
                "".join(cases.read_text(encoding="utf-8").splitlines(True)[:3]), encoding="utf-8"
            )
        checked = run_ovtui("check", str(root), cwd=tmp_path, also_installed=site)
        assert checked.returncode == 0, checked.stdout + checked.stderr

        training = ("train", str(root), "--epochs", "1", "--approve", "all")
        trained = run_ovtui(*training, cwd=tmp_path, also_installed=site)
        assert trained.returncode == 0, trained.stdout + trained.stderr
        assert "backend dice-brain" in trained.stdout
        # A backend that uses no model: no contradiction check, no summary, nothing sent.
        assert model.requests == []

    report: dict[str, Any] = json.loads(_one(root, "runs/*/report.json").read_text(encoding="utf-8"))
    assert report["errors"] == [] and report["backend"] == "dice-brain" and report["model"] is None
    baseline = next(s for s in report["stages"] if s["stage"] == "baseline_eval")
    assert (baseline["cases"], baseline["passed"]) == (3, 0)
    final = next(s for s in report["stages"] if s["stage"] == "final_eval")
    assert final["passed"] == 3
    events = [json.loads(line) for line in _one(root, "runs/*/events.jsonl").read_text().splitlines()]
    started = next(e for e in events if e["kind"] == "run_started")
    assert started["data"]["backend"] == "dice-brain"
    # Its one seam replaced alone: the merger tallied every batch; the offline learner did the rest.
    assert sum(int(n) for n in (root / "merges.txt").read_text().split()) > 0
    [record_id] = report["history_ids"][:1]
    record = json.loads(_one(root, f"history/{record_id}/memory_diff.json").read_text(encoding="utf-8"))
    learned = record["metadata"]["learned_against"]
    assert learned["backend"] == "dice-brain" and learned["model"] is None


def test_a_model_free_backend_builds_no_model_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"environment.py": DICE_DESK, "brain.py": DICE_BRAIN}
    site = install_distribution(tmp_path / "site", "dice_desk", files, ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(site))
    plugins.rescan()
    try:
        workspace = Workspace(_workspace(tmp_path, "http://127.0.0.1:9/v1", "3"))
        parts = workspace.parts
        assert workspace.backend_label == "dice-brain" and parts.contradiction_check().client is None
        parts.engine(RunContext(), approve="all", dry_run=False, wait_for_review=False)
        assert parts.setup().model is None and parts.setup().backend == "dice-brain"
        assert parts.retrieval._summarize is None  # retrieval asks no model for summaries
        assert parts._llm is None  # nothing asked for the [llm] client
    finally:
        monkeypatch.undo()
        plugins.rescan()
