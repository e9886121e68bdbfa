"""``ovtui compare``, ``ovtui report --html`` and sealed splits as a user runs them: real processes
on a trained copy of the sample workspace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_ovtui
from workspace_support import build_sample_workspace


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A sample workspace trained one epoch (every plan applied), and its history record ids, oldest first."""
    root = build_sample_workspace(tmp_path_factory.mktemp("compare") / "ws")
    proc = run_ovtui("train", str(root), "--epochs", "1", "--approve", "all", "--no-eval", cwd=root.parent)
    assert proc.returncode == 0, proc.stderr
    records = sorted(p.name for p in (root / "history").iterdir() if p.is_dir())
    assert len(records) > 1, records
    return root, records


def stage_results(root: Path, run_id: str) -> dict[str, dict[str, list[int]]]:
    report = json.loads((root / "runs" / run_id / "report.json").read_text(encoding="utf-8"))
    return {s["stage"]: s["results"] for s in report["stages"]}


def test_compare_prints_one_object_that_agrees_with_the_runs_it_made(trained: tuple[Path, list[str]]) -> None:
    root, records = trained
    proc = run_ovtui(
        "compare", records[0], "current", "-w", str(root), "--trials", "2", "--json", cwd=root.parent
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["a"] == f"history/{records[0]}" and data["b"] == "current" and data["trials"] == 2
    results = stage_results(root, data["run_id"])
    a, b, again = results["compare_a"], results["compare_b"], results["compare_aa"]
    assert set(a) == set(b) == set(again) and all(len(t) == 2 for t in a.values())  # same cases, same trials
    assert data["per_case"] == {c: {"a": a[c], "b": b[c], "a_again": again[c]} for c in a}
    rate = {
        name: sum(sum(t) for t in r.values()) / sum(len(t) for t in r.values()) for name, r in results.items()
    }
    assert data["delta"] == pytest.approx(rate["compare_b"] - rate["compare_a"])
    assert data["delta"] > 0 and data["ci"][0] <= data["delta"] <= data["ci"][1]
    assert data["flips"]["gained"] == sorted(c for c in a if sum(a[c]) < 1 and sum(b[c]) == 2)
    assert data["flips"]["lost"] == []
    assert set(data["evidence"]) == set(data["flips"]["gained"])
    assert all(
        e["a"].startswith("failed: ") and e["b"].startswith("passed: ") for e in data["evidence"].values()
    )
    # The agent is scripted: every trial of every case agreed, and the compare says so.
    assert data["deterministic"] is True and data["noise"].startswith("noise is zero by construction")
    assert data["aa"]["delta"] == 0.0 and data["aa"]["p_value"] == 1.0 and data["aa"]["direction"] == "same"
    assert data["aa"]["ci"][0] < 0 < data["aa"]["ci"][1]  # no case moved: bounded, not zero-width
    assert data["test"] == "exact sign test" and data["informative"] == len(data["flips"]["gained"])
    # One epoch wins a handful of test cases: a verdict only with six or more and p < .05.
    gain = data["p_value"] < 0.05 and data["informative"] >= 6
    assert 0 < data["p_value"] < 1
    assert data["verdict"].startswith("B is better than A" if gain else "not distinguishable from noise")
    assert gain or "a verdict needs at least 6" in data["verdict"] or "p=" in data["verdict"]


def test_more_trials_of_the_scripted_agent_give_the_same_p(trained: tuple[Path, list[str]]) -> None:
    root, records = trained
    found = {}
    for trials in ("1", "5"):
        args = ("compare", records[0], "current", "-w", str(root), "--trials", trials, "--json")
        proc = run_ovtui(*args, cwd=root.parent)
        assert proc.returncode == 0, proc.stderr
        found[trials] = json.loads(proc.stdout)
    one, five = found["1"], found["5"]
    assert five["trials"] == 5 and all(len(c["a"]) == 5 for c in five["per_case"].values())
    assert five["p_value"] == one["p_value"] and five["ci"] == one["ci"] and five["verdict"] == one["verdict"]


def test_a_policy_against_itself_is_noise_and_bad_names_are_one_line(trained: tuple[Path, list[str]]) -> None:
    root, _ = trained
    same = run_ovtui("compare", "current", "current", "-w", str(root), cwd=root.parent)
    assert same.returncode == 0, same.stderr
    assert (
        "verdict (α=0.05, by the case): not distinguishable from noise: 0 informative case(s)" in same.stdout
    )
    assert "noise is zero by construction" not in same.stdout  # one trial per case cannot show it
    bad = run_ovtui("compare", "current", "no-such-thing", "-w", str(root), cwd=root.parent)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.startswith(
        "ovtui: error: 'no-such-thing' is not `current`, a folder of experience files"
    )
    empty = root.parent / "empty"
    empty.mkdir()
    for folder in (empty, Path("/etc")):
        nothing = run_ovtui("compare", "current", str(folder), "-w", str(root), cwd=root.parent)
        assert nothing.returncode == 2 and "verdict" not in nothing.stdout
        assert nothing.stderr == (
            f"ovtui: error: {folder} holds no experience file (*.md): not a policy to compare\n"
        )
    html = root.parent / "none.html"
    missing = run_ovtui("report", "no-such-run", "-w", str(root), "--html", str(html), cwd=root.parent)
    assert missing.returncode == 2 and not html.exists()
    assert missing.stderr == "ovtui: error: run 'no-such-run': no run with a report matches it under runs/\n"


def test_the_test_split_is_sealed_by_default_scored_only_on_request_and_every_scoring_counted(
    tmp_path: Path,
) -> None:
    root = build_sample_workspace(tmp_path / "ws")  # no [evaluation] edit: sealed is the default
    test = ("--split", "test")
    refused = run_ovtui("eval", str(root), *test, cwd=tmp_path)
    assert refused.returncode == 2, refused.stdout
    assert "split 'test' is sealed ([evaluation] sealed)" in refused.stderr and "0 time(s)" in refused.stderr
    assert not (root / "runs").exists() or not list((root / "runs").iterdir())  # nothing ran, no report
    train = ("train", str(root), "--epochs", "1", "--approve", "all", "--eval-split", "test")
    assert run_ovtui(*train, cwd=tmp_path).returncode == 2
    assert run_ovtui("compare", "current", "current", "-w", str(root), *test, cwd=tmp_path).returncode == 2

    first = run_ovtui("eval", str(root), *test, "--unseal", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "sealed split support/test: scored 1 time(s), this run included" in first.stdout
    compared = run_ovtui(
        "compare", "current", "current", "-w", str(root), *test, "--unseal", "--json", cwd=tmp_path
    )
    assert json.loads(compared.stdout)["sealed"] == {"support/test": 2}
    trained = run_ovtui(*train, "--unseal", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    assert "scored on: support/test (a sealed split, unsealed on request)" in trained.stdout
    assert "sealed split support/test: scored 3 time(s), this run included" in trained.stdout
    again = run_ovtui("eval", str(root), *test, cwd=tmp_path)
    assert "support/test has been scored 3 time(s)" in again.stderr
    (root / ".ovtui" / "sealed.json").write_text("[1, 2]", encoding="utf-8")
    broken = run_ovtui("eval", str(root), *test, "--unseal", cwd=tmp_path)
    assert broken.returncode == 2
    assert broken.stderr == "ovtui: error: .ovtui/sealed.json: not a JSON object of counts\n"
    assert len(list((root / "runs").iterdir())) == 3  # eval, compare, train: the refusals left no run
    for unsealed in ((), ("--split", "train")):  # validation (the default) and train: never counted
        other = run_ovtui("eval", str(root), *unsealed, cwd=tmp_path)
        assert other.returncode == 0 and "sealed split" not in other.stdout
