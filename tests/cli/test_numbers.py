"""Numbers on the command line: nonsense is refused naming the option, 0 means zero where it can."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_ovtui
from workspace_support import build_sample_workspace


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    return build_sample_workspace(tmp_path / "ws")


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--epochs", "-1", "argument --epochs: -1 is too small: use 0 or more"),
        ("--batch-size", "0", "argument --batch-size: 0 is too small: use 1 or more"),
        ("--limit", "-3", "argument --limit: -3 is too small: use 0 or more"),
        ("--epochs", "two", "argument --epochs: 'two' is not a whole number"),
    ],
)
def test_nonsense_is_refused_and_nothing_runs(sample: Path, option: str, value: str, message: str) -> None:
    proc = run_ovtui("train", str(sample), option, value, cwd=sample.parent)
    assert proc.returncode == 2 and message in proc.stderr
    assert not (sample / "runs").exists()


def _report(sample: Path) -> dict[str, Any]:
    [run] = list((sample / "runs").iterdir())
    report: dict[str, Any] = json.loads((run / "report.json").read_text())
    return report


def test_zero_epochs_evaluates_without_training(sample: Path) -> None:
    proc = run_ovtui("train", str(sample), "--epochs", "0", "--approve", "all", cwd=sample.parent)
    assert proc.returncode == 0, proc.stderr
    report = _report(sample)
    assert [s["stage"] for s in report["stages"]] == ["baseline_eval", "final_eval"]
    assert report["history_ids"] == [] and not (sample / "history").exists()


def test_limit_zero_trains_on_no_case(sample: Path) -> None:
    args = ("train", str(sample), "--limit", "0", "--epochs", "1", "--no-eval", "--approve", "all")
    proc = run_ovtui(*args, cwd=sample.parent)
    assert proc.returncode == 0, proc.stderr
    [epoch] = _report(sample)["stages"]
    assert (epoch["stage"], epoch["cases"]) == ("train_epoch", 0)


def test_history_limit_zero_lists_nothing(sample: Path) -> None:
    args = ("train", str(sample), "--limit", "4", "--epochs", "1", "--no-eval", "--approve", "all")
    assert run_ovtui(*args, cwd=sample.parent).returncode == 0
    listed = run_ovtui("history", str(sample), "--json", "--limit", "0", cwd=sample.parent)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    one = run_ovtui("history", str(sample), "--json", "--limit", "1", cwd=sample.parent)
    assert len(json.loads(one.stdout)) == 1
    refused = run_ovtui("history", str(sample), "--limit", "-1", cwd=sample.parent)
    assert refused.returncode == 2 and "argument --limit: -1 is too small" in refused.stderr
