"""``ovtui revalidate`` as a user runs it: real processes on a sample workspace trained with an
environment of another package whose written policy is a file the test changes. That policy
closes whole kinds of requests (``closed: refund_request``): once closed, the agent's runs of
those cases fail, as an agent following an old experience against a new policy would."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_support import run_ovtui
from plugin_support import install_distribution
from workspace_support import build_sample_workspace

POLICY_VARIABLE = "DRIFTING_POLICY"

DRIFTING = '''
import os
from pathlib import Path

from ovtui.core.domain import RubricEvaluation
from ovtui.environments.sample.environment import SampleEnvironment


def closed_intents(policy):
    return [line.split(":", 1)[1].strip() for line in policy.splitlines() if line.startswith("closed:")]


class PolicyFollowingAgent:
    """The sample's agent, its runs of a closed kind of request failed (the policy forbids them now)."""

    label = "drifting"

    def __init__(self, environment, inner):
        self.environment, self.inner = environment, inner

    async def execute(self, cases, policy_set, context):
        rollouts = await self.inner.execute(cases, policy_set, context)
        closed = closed_intents(self.environment.policy_text())
        failed = RubricEvaluation(passed=False, score=0.0, feedback=["the policy closes this request now"])
        shut = [any(r.case.name.startswith(c) for c in closed) for r in rollouts]
        return [r.model_copy(update={"evaluation": failed}) if s else r for r, s in zip(rollouts, shut)]


class DriftingEnvironment(SampleEnvironment):
    name = "drifting"

    def policy_text(self):
        return Path(os.environ["DRIFTING_POLICY"]).read_text(encoding="utf-8")

    def agent(self, hotness):
        return PolicyFollowingAgent(self, super().agent(hotness))


def environment(config=None):
    return DriftingEnvironment()
'''


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_distribution(
        tmp_path_factory.mktemp("site") / "site",
        "drifting_desk",
        {"environment.py": DRIFTING},
        {"ovtui.environments": {"drifting": "drifting_desk.environment:environment"}},
    )


def _use_drifting(root: Path) -> None:
    config = root / "ovtui.toml"
    text = config.read_text(encoding="utf-8").replace('agent = "sample"', 'agent = "drifting"')
    config.write_text(text.replace("[trainer]\n", '[trainer]\nenvironment = "drifting"\n'), encoding="utf-8")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, site: Path) -> Path:
    """A sample workspace on the drifting environment, trained two epochs under an open policy: the
    second serves what the first learned, so the ledger holds outcomes from before a drift."""
    root = build_sample_workspace(tmp_path_factory.mktemp("revalidate") / "ws")
    _use_drifting(root)
    (root / "policy.md").write_text("# Help desk policy\nEvery request is served.\n", encoding="utf-8")
    proc = _ovtui(root, site, "train", str(root), "--epochs", "2", "--approve", "all", "--no-eval")
    assert proc.returncode == 0, proc.stderr
    return root


@pytest.fixture
def workspace(trained: Path, tmp_path: Path) -> Path:
    """A copy of the trained workspace this test may change."""
    return Path(shutil.copytree(trained, tmp_path / "ws"))


def _ovtui(root: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_ovtui(
        *args, cwd=root.parent, also_installed=site, env={POLICY_VARIABLE: str(root / "policy.md")}
    )


def _revalidate(root: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _ovtui(root, site, "revalidate", "-w", str(root), *args)


def _close_refunds(root: Path) -> None:
    policy = root / "policy.md"
    policy.write_text(policy.read_text(encoding="utf-8") + "closed: refund_request\n", encoding="utf-8")


def _runs(root: Path) -> set[str]:
    return {p.name for p in (root / "runs").iterdir()}


def _pending(root: Path) -> list[dict[str, object]]:
    folder = root / ".ovtui" / "pending"
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]


def test_an_unchanged_setup_says_nothing_drifted_and_calls_no_agent(workspace: Path, site: Path) -> None:
    runs = _runs(workspace)
    proc = _revalidate(workspace, site)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("nothing drifted since the experiences were learned")
    assert not any("to revalidate" in line or line.startswith("rerun:") for line in lines)
    assert _runs(workspace) == runs  # no run: no agent was called
    assert _pending(workspace) == []


def test_a_changed_policy_is_named_and_the_experience_whose_cases_fail_is_queued_stale(
    workspace: Path, site: Path
) -> None:
    _close_refunds(workspace)
    proc = _revalidate(workspace, site, "--yes")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("policy text changed: ") for line in lines), proc.stdout
    assert not any(
        line.startswith(("model changed", "agent changed", "tool schema changed")) for line in lines
    )
    assert "stale: refund_request (policy_text)" in lines
    [plan] = _pending(workspace)
    assert f"queued for review as plan {plan['plan_id']} (ovtui review show {plan['plan_id']})" in lines
    items = plan["plan"]["items"]  # type: ignore[index]
    refund = next(i for i in items if i["target_name"] == "refund_request")
    assert refund["metadata"]["status"] == "deprecated"
    assert refund["metadata"]["revalidation"]["stale"] is True
    assert [d["part"] for d in refund["metadata"]["revalidation"]["drift"]] == ["policy_text"]
    failing = refund["metadata"]["revalidation"]["failing"]
    assert failing and all(c.startswith("refund_request_") for c in failing)
    assert all(e.startswith("failed: ") for e in failing.values())
    # In the normal review queue, the item's rationale saying why.
    index = items.index(refund)
    shown = _ovtui(workspace, site, "review", "show", str(plan["plan_id"]), str(index), "-w", str(workspace))
    assert "why       stale: its linked case(s) refund_request_" in shown.stdout, shown.stderr
    assert "+deprecated" in shown.stdout


def test_json_carries_the_drift_the_reruns_and_the_queued_plan(workspace: Path, site: Path) -> None:
    # What fails already under the setup it was learned against (training leaves some cases failing).
    forced = _revalidate(workspace, site, "--force", "--yes", "--json")
    assert forced.returncode == 0, forced.stderr
    before = json.loads(forced.stdout)
    assert before["drifted"] == [] and before["forced"] is True
    failing_before = {c for c, trials in before["results"].items() if not all(trials)}
    _close_refunds(workspace)
    config = workspace / "ovtui.toml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("[llm]\n", '[llm]\nmodel = "another-model"\n'), encoding="utf-8")
    proc = _revalidate(workspace, site, "--yes", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    # The workspace's backend uses no model: [llm] model is not part of what it learned against.
    assert [d["part"] for d in data["drifted"]] == ["policy_text"]
    assert data["setup"]["model"] is None and data["setup"]["backend"] == "offline"
    assert data["setup"]["environment"] == "drifting"
    assert data["dataset"] == "support" and data["split"] == "train" and data["trials"] == 1
    rerun = sorted({c for a in data["affected"] for c in a["cases"]})
    assert sorted(data["results"]) == rerun and data["agent_calls"] == len(rerun)
    failing = {c for c, trials in data["results"].items() if not all(trials)}
    assert failing - failing_before == {c for c in rerun if c.startswith("refund_request_")}
    assert "refund_request" in {s["name"] for s in data["stale"]}
    refunds = {c for c in failing if c.startswith("refund_request_")}
    assert refunds <= {c for s in data["stale"] for c in s["failing"]} <= failing
    # Judged by the paired rule: the refund cases passed before the drift and fail now.
    [judged] = [j for j in data["judged"] if j["name"] == "refund_request"]
    assert judged["stale"] and judged["cases"] >= 6 and "worse: stale" in judged["line"]
    # Cases that failed already before any drift made nothing stale: nothing did worse.
    assert before["plan_id"] is None and before["stale"] == []
    assert {p["plan_id"] for p in _pending(workspace)} == {data["plan_id"]}


def test_without_a_terminal_or_yes_nothing_runs(workspace: Path, site: Path) -> None:
    _close_refunds(workspace)
    runs = _revalidate(workspace, site)
    assert runs.returncode == 2
    assert runs.stderr.strip().endswith("agent call(s): pass --yes to run without a terminal")
    assert "Traceback" not in runs.stderr and _pending(workspace) == []


def test_bad_input_is_one_line(workspace: Path, site: Path, tmp_path: Path) -> None:
    fresh = build_sample_workspace(tmp_path / "fresh")
    proc = run_ovtui("revalidate", "-w", str(fresh), "--yes", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "ovtui: error: no history records yet: nothing was learned to revalidate (run `ovtui train`)"
    )
    unknown = _revalidate(workspace, site, "--dataset", "nope", "--yes")
    assert unknown.returncode == 2 and len(unknown.stderr.strip().splitlines()) == 1
    assert "datasets/nope/train.jsonl" in unknown.stderr and "Traceback" not in unknown.stderr
