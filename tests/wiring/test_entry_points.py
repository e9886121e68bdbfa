"""An environment, an agent, a backend or a trainer from another package is one module and one entry point.

Each is a package written here into a folder with its distribution metadata (``plugin_support``),
seen by a real ``ovtui`` process through PYTHONPATH — nothing of ovtui is changed or told about
it — and run end to end: ``ovtui env cases`` lists its cases, ``ovtui check`` validates them
through it, ``ovtui train`` runs them with its agent, grades them with its evaluator, trains on
them (with its backend, its trainer). A broken one is one line naming its distribution.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_ovtui
from plugin_support import install_distribution
from workspace_support import build_sample_workspace

from ovtui.cli.init import init_workspace

TOY_DESK = '''
    """A desk that answers where an order is: right only when it looked the order up."""

    from ovtui.plugins import (
        Case, CriterionResult, EnvironmentDefaults, Message, Rollout, Rubric, RubricCriterion,
        RubricEvaluation, TextPart, ToolPart, check_split,
    )

    LOOKUP = "lookup_order"


    def order_case(split, number):
        return Case(
            name=f"order_status_{split}_{number}",
            task_signature="order_status",
            input={"user_query": f"Where is my order {number}?", "order_id": str(number)},
            rubric=Rubric(
                name="order_status",
                criteria=[
                    RubricCriterion(
                        name="looks_up_order",
                        description="the order is looked up before the answer",
                        metadata={"kind": "required_call", "tool": LOOKUP},
                    )
                ],
            ),
        )


    class TheToyAgentsReading:
        name = "the toy agent"

        def unread_lines(self, content):
            lines = enumerate(content.splitlines(), start=1)
            return [(n, line.strip()) for n, line in lines if "please" in line.lower()]


    class ToyDesk(EnvironmentDefaults):
        name = "toy-desk"
        description = "a toy order desk"
        reader = TheToyAgentsReading()

        def splits(self):
            return ["train", "test"]

        def cases(self, split):
            check_split(self, split)
            return [order_case(split, n) for n in range(4 if split == "train" else 2)]

        async def execute(self, case, policy_set, context):
            knows = any(LOOKUP in e.content for e in policy_set.policies)
            messages = [Message(role="user", parts=[TextPart(text=case.input["user_query"])])]
            if knows:
                call = ToolPart(
                    tool_id="t1", tool_name=LOOKUP, tool_input={"order_id": case.input["order_id"]},
                    tool_output="shipped",
                )
                messages.append(Message(role="assistant", parts=[call]))
            answer = "It has shipped." if knows else "I cannot tell."
            messages.append(Message(role="assistant", parts=[TextPart(text=answer)]))
            rollout = Rollout(case=case, messages=messages, policy_snapshot_id=context.policy_snapshot_id)
            rollout.evaluation = await self.evaluate(rollout)
            return rollout

        async def evaluate(self, rollout):
            called = any(p.tool_name == LOOKUP for m in rollout.messages for p in m.tool_parts)
            feedback = [] if called else [f"{LOOKUP} was never called"]
            result = CriterionResult(
                criterion_name="looks_up_order", passed=called, score=float(called), feedback=feedback
            )
            return RubricEvaluation(
                passed=called, score=float(called), criterion_results=[result], feedback=feedback,
                metadata={"evaluator": "toy-desk"},
            )

        def case_problems(self, case):
            if case.input.get("order_id"):
                return []
            return ["input.order_id is missing: the toy desk has no order to look up"]


    def environment(config=None):
        return ToyDesk()
'''


def _report(root: Path) -> dict[str, Any]:
    [path] = (root / "runs").glob("*/report.json")
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return report


def _stage(report: dict[str, Any], name: str) -> dict[str, Any]:
    stage: dict[str, Any] = next(s for s in report["stages"] if s["stage"] == name)
    return stage


def _configure(root: Path, text: str) -> None:
    (root / "ovtui.toml").write_text(text, encoding="utf-8")


def test_an_environment_from_another_package_is_listed_checked_run_graded_and_trained_on(
    tmp_path: Path,
) -> None:
    site = install_distribution(
        tmp_path / "site",
        "toy_desk",
        {"environment.py": TOY_DESK},
        {"ovtui.environments": {"toy-desk": "toy_desk.environment:environment"}},
    )
    root = tmp_path / "ws"
    init_workspace(root)
    _configure(
        root,
        '[trainer]\nenvironment = "toy-desk"\nagent = "toy-desk"\ndataset = "orders"\n\n'
        '[llm]\nbackend = "offline"\n',
    )
    listed = run_ovtui("env", "list", cwd=tmp_path, also_installed=site)
    assert listed.returncode == 0, listed.stderr
    assert any(ln.startswith("toy-desk") and "train 4, test 2" in ln for ln in listed.stdout.splitlines())
    (root / "datasets/orders").mkdir(parents=True)
    # Its held-out cases are the dataset's validation split: what training scores (test stays sealed).
    for split, named in (("train", "train"), ("test", "validation")):
        arguments = ("env", "cases", "toy-desk", "--split", split)
        cases = run_ovtui(*arguments, cwd=tmp_path, also_installed=site)
        assert cases.returncode == 0, cases.stderr
        (root / f"datasets/orders/{named}.jsonl").write_text(cases.stdout, encoding="utf-8")

    # check: the cases through the environment's validator, experiences through its agent's reader
    good = json.loads((root / "datasets/orders/validation.jsonl").read_text(encoding="utf-8").splitlines()[0])
    (root / "datasets/broken").mkdir()
    no_order = {**good, "input": {"user_query": "Where is it?"}}
    (root / "datasets/broken/test.jsonl").write_text(json.dumps(no_order) + "\n", encoding="utf-8")
    (root / "memories/experiences/greeting.md").write_text(
        "## Situation\n- Someone says hello.\n## Approach\n- Please be nice.\n## Reflect\n- Answer.\n",
        encoding="utf-8",
    )
    checked = run_ovtui("check", str(root), "--notes", cwd=tmp_path, also_installed=site)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    out = checked.stdout.splitlines()
    missing = "input.order_id is missing: the toy desk has no order to look up"
    assert f"datasets/broken/test.jsonl:1: {missing}" in out
    unread = "line 4 is not understood by the toy agent: - Please be nice."
    assert f"note: memories/experiences/greeting.md:4: {unread}" in out
    (root / "datasets/broken/test.jsonl").unlink()

    training = ("train", str(root), "--epochs", "1", "--approve", "all")
    trained = run_ovtui(*training, cwd=tmp_path, also_installed=site)
    assert trained.returncode == 0, trained.stdout + trained.stderr
    report = _report(root)
    assert report["errors"] == []
    # Run by its agent and graded by its evaluator: nothing is looked up before it learns to.
    assert (_stage(report, "baseline_eval")["cases"], _stage(report, "baseline_eval")["passed"]) == (2, 0)
    assert _stage(report, "train_epoch")["cases"] == 4
    # Trained on: the failed criterion became an experience the agent now follows.
    assert any("lookup_order" in p.read_text() for p in (root / "memories/experiences").glob("*.md"))
    assert len(list((root / "memories/trajectories").glob("order_status*.md"))) >= 4
    assert _stage(report, "final_eval")["passed"] == 2


TOY_BRAIN = '''
    """A backend that always learns the same thing, whatever the rollout."""

    from ovtui.plugins import (
        Backend, Backends, ExperienceProposal, Extraction, MergeDecision, TrajectoryDraft,
    )

    LESSON = "## Situation\\n- Any request.\\n## Approach\\n- Ask the toy brain.\\n## Reflect\\n- Ask it."


    class Extractor:
        label = "toy"

        async def extract(self, rollout, evaluation, feedback):
            steps = "## Task\\n- toy\\n## Steps\\n1. toy\\n## Outcome\\n- toy"
            return [TrajectoryDraft(name="toy_run", content=steps)]


    class Proposer:
        label = "toy"

        async def propose(self, trajectory, analysis, candidates):
            return [ExperienceProposal(experience_name="toy_brain_lesson", content=LESSON, rationale="toy")]


    class Merger:
        label = "toy"

        async def merge(self, gradients, policy_set, similar):
            return [
                MergeDecision(
                    experience_name="toy_brain_lesson", content=LESSON,
                    source_gradients=list(range(len(gradients))),
                )
            ]


    class SessionReader:
        async def extract(self, messages, session_id, archive_name, policy):
            return Extraction()


    backend = Backend(
        label="toy", uses_model=False,
        build=lambda resources: Backends(Extractor(), Proposer(), Merger(), SessionReader()),
    )
'''


def _train_the_sample_with(
    tmp_path: Path, package: str, module: str, entry_points: dict[str, dict[str, str]], edit: tuple[str, str]
) -> Path:
    """The sample workspace, its ovtui.toml edited (``edit``: old, new) to name the component of
    ``package`` (its one module ``plugin.py``), trained by a real ``ovtui train`` that sees it."""
    site = install_distribution(tmp_path / "site", package, {"plugin.py": module}, entry_points)
    root = build_sample_workspace(tmp_path / "ws")
    config = (root / "ovtui.toml").read_text(encoding="utf-8")
    assert edit[0] in config
    _configure(root, config.replace(*edit))
    arguments = ("train", str(root), "--epochs", "1", "--approve", "all", "--limit", "3")
    trained = run_ovtui(*arguments, cwd=tmp_path, also_installed=site)
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert _report(root)["errors"] == []
    return root


def test_a_backend_from_another_package_does_the_thinking_of_a_run(tmp_path: Path) -> None:
    entry = {"ovtui.backends": {"toy-brain": "toy_brain.plugin:backend"}}
    root = _train_the_sample_with(
        tmp_path, "toy_brain", TOY_BRAIN, entry, ('backend = "offline"', 'backend = "toy-brain"')
    )
    lesson = (root / "memories/experiences/toy_brain_lesson.md").read_text(encoding="utf-8")
    assert "- Ask the toy brain." in lesson
    assert len(list((root / "memories/trajectories").glob("toy_run_*.md"))) == 3


TOY_TRAINER = '''
    """A trainer that trains like the batch trainer and keeps a tally of what it was given."""

    from ovtui.plugins import RolloutTrainingResult


    class TallyingTrainer:
        def __init__(self, tally, engine):
            self.tally, self.engine = tally, engine

        async def train_rollouts(self, rollouts, policy_set, analyses=None):
            with self.tally.open("a", encoding="utf-8") as out:
                out.write(f"{len(rollouts)}\\n")
            estimated = await self.engine.analyze_and_estimate(rollouts, policy_set, analyses)
            applied = await self.engine.plan_and_apply(
                estimated.gradients, policy_set, analyses=estimated.analyses
            )
            return RolloutTrainingResult(
                analyses=estimated.analyses, gradients=estimated.gradients, plan=applied.plan,
                apply_result=applied.result, errors=estimated.errors + applied.errors,
            )


    def trainer(resources, engine, policy_set):
        return TallyingTrainer(resources.paths.root / "tally.txt", engine)
'''


def test_a_trainer_from_another_package_feeds_the_engine(tmp_path: Path) -> None:
    entry = {"ovtui.trainers": {"tally": "toy_trainer.plugin:trainer"}}
    root = _train_the_sample_with(
        tmp_path, "toy_trainer", TOY_TRAINER, entry, ("[trainer]\n", '[trainer]\ntrain_with = "tally"\n')
    )
    assert _report(root)["history_ids"]  # what it trained was applied
    assert sum(int(n) for n in (root / "tally.txt").read_text().split()) == 3


TOY_AGENT = '''
    """An agent that never calls a tool: it answers every request at once, politely and wrongly."""

    from ovtui.plugins import Message, Rollout, TextPart


    class HastyAgent:
        def __init__(self, tally):
            self.tally = tally

        async def execute(self, cases, policy_set, context):
            with self.tally.open("a", encoding="utf-8") as out:
                out.write(f"{len(cases)}\\n")
            return [
                Rollout(
                    case=case,
                    messages=[Message(role="assistant", parts=[TextPart(text="Done, have a nice day!")])],
                    policy_snapshot_id=context.policy_snapshot_id,
                )
                for case in cases
            ]


    def agent(resources):
        return HastyAgent(resources.paths.root / "tally.txt")
'''


def test_an_agent_from_another_package_runs_the_cases_and_the_datasets_environment_grades_them(
    tmp_path: Path,
) -> None:
    entry = {"ovtui.agents": {"hasty": "toy_agent.plugin:agent"}}
    root = _train_the_sample_with(
        tmp_path, "toy_agent", TOY_AGENT, entry, ('agent = "sample"', 'agent = "hasty"')
    )
    report = _report(root)
    ran = sum(int(n) for n in (root / "tally.txt").read_text().split())
    baseline, final = _stage(report, "baseline_eval"), _stage(report, "final_eval")
    # Every case it was given: trained, evaluated, and whole validation runs of the gate.
    assert (ran - 3 - baseline["cases"] - final["cases"]) % baseline["cases"] == 0
    # Graded by the sample environment's rubric (an ungraded rollout would stop the eval): an agent
    # that calls no tool fails the cases that need one, and what it learned cannot change it.
    assert final["passed"] == baseline["passed"] < baseline["cases"]


@pytest.mark.parametrize(
    ("module", "reason"),
    [
        ("raise RuntimeError('no licence\\nfound')\n", "RuntimeError: no licence found"),
        ("", "AttributeError"),
    ],
)
def test_a_broken_entry_point_is_one_line_naming_its_distribution(
    tmp_path: Path, module: str, reason: str
) -> None:
    site = install_distribution(
        tmp_path / "site",
        "broken_env",
        {"environment.py": module},
        {"ovtui.environments": {"broken": "broken_env.environment:environment"}},
    )
    done = run_ovtui("env", "cases", "broken", cwd=tmp_path, also_installed=site)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "broken = 'broken_env.environment:environment'" in done.stderr
    assert "(group ovtui.environments) of broken_env 0.1 cannot be loaded" in done.stderr
    assert reason in done.stderr
