"""``[sample] slip``: the sample agent forgets its experiences on a seeded share of its runs, so the
A/A null, trials and the verdict can be watched with noise offline; a rerun slips alike."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_ovtui
from workspace_support import build_sample_workspace

from ovtui.environments.sample.slip import Slips
from ovtui.plugins import ExecutionContext


def test_slips_are_seeded_per_stage_case_and_trial() -> None:
    context = ExecutionContext(policy_snapshot_id="s", run_id="r", stage="compare_a")
    draws = [Slips(0.3, 7).slips("case", context) for _ in range(3)]
    assert len(set(draws)) == 1  # a fresh counter: the same first trial each time
    one = Slips(0.3, 7)
    trials = [one.slips(f"c{i}", context) for i in range(200) for _ in range(3)]
    assert 0.2 < sum(trials) / len(trials) < 0.4  # about the chance asked for
    again = Slips(0.3, 7)
    assert [again.slips(f"c{i}", context) for i in range(200) for _ in range(3)] == trials
    other = ExecutionContext(policy_snapshot_id="s", run_id="r", stage="compare_aa")
    assert [again.slips(f"c{i}", other) for i in range(200) for _ in range(3)] != trials
    assert not any(Slips().slips("c", context) for _ in range(50))  # the default never slips


def test_a_slipping_agent_shows_noise_and_reruns_alike(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    trained = run_ovtui("train", str(root), "--epochs", "1", "--approve", "all", "--no-eval", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    steady = run_ovtui(
        "compare",
        "current",
        "current",
        "-w",
        str(root),
        "--split",
        "train",
        "--trials",
        "2",
        "--json",
        cwd=tmp_path,
    )
    assert steady.returncode == 0, steady.stderr
    assert json.loads(steady.stdout)["deterministic"] is True
    config = root / "ovtui.toml"
    config.write_text(
        config.read_text(encoding="utf-8") + "\n[sample]\nslip = 0.3\nseed = 7\n", encoding="utf-8"
    )
    args = ["compare", "current", "current", "-w", str(root), "--split", "train", "--trials", "3", "--json"]
    first, second = (json.loads(run_ovtui(*args, cwd=tmp_path).stdout) for _ in range(2))
    assert first["per_case"] == second["per_case"]  # seeded: a rerun slips in the same places
    assert first["deterministic"] is False and "A run again moved" in first["noise"]
    assert any(len(set(c["a"])) > 1 for c in first["per_case"].values())  # trials of a case disagree
    assert not first["verdict"].startswith("B is")  # A against A: no verdict
    bad = config.read_text(encoding="utf-8").replace("slip = 0.3", "slip = 3")
    config.write_text(bad, encoding="utf-8")
    refused = run_ovtui(*args, cwd=tmp_path)
    assert refused.returncode == 2 and "[sample.slip]" in refused.stderr and "Traceback" not in refused.stderr
