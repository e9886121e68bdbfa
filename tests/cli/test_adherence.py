"""End to end: a real train run records adherence beside the ledger; a run of the sample agent
slipping (every rollout leaves one step out) through the product's pipeline is counted, and
``ovtui adherence --json`` reports the injected violations for the experiences they break."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_ovtui
from workspace_support import build_sample_workspace, kernel_of

from ovtui.core.context import ExecutionContext
from ovtui.environments.sample.agent import SampleAgentExecutor
from ovtui.environments.sample.environment import SampleEnvironment
from ovtui.plugins.adherence import ASK, Directive
from ovtui.storage.paths import ADHERENCE_FILE, WorkspacePaths
from ovtui.testing.slipping_agent import SLIP, SlippingAgent
from ovtui.train.adherence.checker import check
from ovtui.train.adherence.store import BY_MODEL, AdherenceStore, Observation
from ovtui.train.components.case_loader import ListCaseLoader
from ovtui.train.components.snapshotter import ContentHashPolicySnapshotter
from ovtui.train.pipeline import OfflinePolicyOptimizationPipeline
from ovtui.wiring.workspace import Workspace

FIELDS = {
    "experience",
    "uses",
    "followed",
    "violated",
    "not_applicable",
    "pass_rate_followed",
    "pass_rate_violated",
    "class",
}


def adherence_json(root: Path) -> dict[str, dict[str, object]]:
    done = run_ovtui("adherence", "-w", str(root), "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    return {entry["experience"]: entry for entry in json.loads(done.stdout)}


def asks_for(directive: Directive, skipped: str) -> bool:
    return skipped in directive.tools or (skipped == ASK and directive.kind == "confirm")


async def test_a_train_run_then_slips_are_reported(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "sample")
    trained = run_ovtui("train", str(root), "--approve", "all", "--no-eval", cwd=root)
    assert trained.returncode == 0, trained.stderr
    assert (root / ADHERENCE_FILE).is_file()
    after_train = adherence_json(root)
    assert after_train and all(set(entry) >= FIELDS for entry in after_train.values())
    assert sum(int(e["uses"]) for e in after_train.values()) > 0  # type: ignore[call-overload]

    workspace = Workspace(root)
    kernel = kernel_of(workspace)
    policy = workspace.reading.experiences()
    cases = SampleEnvironment().cases("test")
    context = ExecutionContext(policy_snapshot_id="clean")
    clean = {r.case.name: r for r in SampleAgentExecutor().execute_sync(cases, policy, context)}
    pipeline = OfflinePolicyOptimizationPipeline(
        ContentHashPolicySnapshotter(),
        SlippingAgent(1.0, seed=7),
        None,
        kernel.loader,
        adherence=kernel.adherence,
    )
    slipped = (await pipeline.eval(ListCaseLoader(cases), policy)).rollouts
    await workspace.aclose()

    # What each slip breaks: a directive of an experience it used that the clean rollout followed.
    reader = kernel.adherence.reader
    expected: dict[str, int] = {}
    for rollout in slipped:
        skipped = rollout.metadata.get(SLIP)
        before = reader.trajectory(clean[rollout.case.name].messages)
        for name in rollout.metadata["experiences_used"]:
            directives = reader.directives(policy.by_name()[name].content)
            if isinstance(skipped, str) and any(
                asks_for(d, skipped) and check(d, before) == "followed" for d in directives
            ):
                expected[name] = expected.get(name, 0) + 1
    assert sum(expected.values()) >= len(cases) // 2  # most slips break a directive followed before

    reported = adherence_json(root)
    for name, broken in expected.items():
        grown = int(reported[name]["violated"]) - int(after_train.get(name, {}).get("violated", 0))  # type: ignore[call-overload]
        assert grown >= broken, (name, grown, broken)
        examples = [v for d in reported[name]["directives"] for v in d["violations"]]  # type: ignore[attr-defined]
        assert {v["case"] for v in examples} & {c.name for c in cases}

    # The run's HTML page has a row per experience, its counts as the command reports them.
    out = tmp_path / "report.html"
    assert run_ovtui("report", "-w", str(root), "--html", str(out), cwd=tmp_path).returncode == 0
    page = out.read_text(encoding="utf-8")
    assert "<h2>Adherence</h2>" in page
    for name, entry in reported.items():
        assert f'data-violated="{entry["violated"]}"><td>{name}</td>' in page


def test_no_record_yet_is_one_line(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "sample")
    done = run_ovtui("adherence", str(root), cwd=root)
    assert done.returncode == 0 and done.stdout.startswith("no adherence recorded yet")
    (root / ADHERENCE_FILE).parent.mkdir(exist_ok=True)
    (root / ADHERENCE_FILE).write_text("{not json")
    broken = run_ovtui("adherence", str(root), "--json", cwd=root)
    assert broken.returncode == 2 and "adherence.json" in broken.stderr and "Traceback" not in broken.stderr


def test_the_models_verdicts_are_told_apart(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "sample")
    polite = Directive("unchecked", (), line="Keep the tone polite")
    uri = "viking://user/default/memories/experiences/x.md"
    uses = [
        Observation(uri, "x", 1, f"case_{n}", False, ((polite, "violated"),), f"rollout:{n}", judged)
        for n, judged in enumerate([frozenset({0}), frozenset({0}), frozenset()])
    ]
    AdherenceStore(WorkspacePaths(root)).record_all([(f"rollout:{n}", [u]) for n, u in enumerate(uses)])
    done = run_ovtui("adherence", str(root), cwd=root)
    assert done.returncode == 0, done.stderr
    assert "most broken: Keep the tone polite (3 of 3, 2 by the model)" in done.stdout
    directives = adherence_json(root)["x"]["directives"]
    assert isinstance(directives, list)
    [directive] = directives
    assert directive["judged"] == {"violated": 2}
    assert [v["by"] for v in directive["violations"]] == [BY_MODEL, BY_MODEL, None]
