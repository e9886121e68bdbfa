"""The README's set-up commands as a new user runs them, and what ``init`` tells them next."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_support import run_ovtui
from repo_paths import REPO


def setup_commands() -> list[str]:
    """The shell lines of the README's "Set up" section, in order."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Set up", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```sh\n(.*?)```", section, re.S)]


def ovtui_steps(command: str) -> list[list[str]]:
    """The ``ovtui`` invocations of a ``&&`` chain, as argument lists."""
    steps = [shlex.split(part) for part in command.split("&&")]
    return [step[1:] for step in steps if step and step[0].endswith("bin/ovtui")]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    _, second = setup_commands()
    assert "pytest" in second
    assert second in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_the_first_setup_command_trains_an_ignored_folder_and_never_scores_its_test_split(
    tmp_path: Path,
) -> None:
    """README command 1 on a workspace `ovtui init --sample` makes: a before/after figure on the
    validation split; the sealed test split is never scored unless asked."""
    first, _ = setup_commands()
    steps = ovtui_steps(first)
    assert [step[0] for step in steps] == ["init", "train"]
    folder = steps[0][1]
    assert steps[1][1] == folder and "--sample" in steps[0]
    if (REPO / ".git").exists() and shutil.which("git"):
        tracked = subprocess.run(["git", "ls-files", folder], cwd=REPO, capture_output=True, text=True)
        assert tracked.stdout == "", f"{folder}/ holds tracked files the set-up would change"
        ignored = subprocess.run(["git", "check-ignore", "-q", f"{folder}/ovtui.toml"], cwd=REPO)
        assert ignored.returncode == 0, f"{folder}/ is not git-ignored"
    for step in steps:  # in a fresh folder, as in a fresh clone
        proc = run_ovtui(*step, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
    assert "baseline accuracy: 0.00% (0/10)" in proc.stdout  # the before/after figure, on validation
    assert "final accuracy: 100.00% (10/10)" in proc.stdout
    assert "scored on: support/validation" in proc.stdout
    workspace = tmp_path / folder
    test_cases = {
        json.loads(line)["name"]
        for line in (workspace / "datasets/support/test.jsonl").read_text(encoding="utf-8").splitlines()
    }
    [run] = list((workspace / "runs").iterdir())
    report = json.loads((run / "report.json").read_text(encoding="utf-8"))
    assert report["split"] == "validation" and report["sealed"] == {}
    scored = {case for stage in report["stages"] for case in stage["results"]}
    assert scored and not scored & test_cases  # no stage ran a test case
    assert not (workspace / ".ovtui" / "sealed.json").exists()  # nothing ever counted a scoring
    listed = run_ovtui("history", folder, "--json", cwd=tmp_path)
    records = json.loads(listed.stdout)
    assert records and all(sum(r["counts"].values()) > 0 for r in records)  # no empty ones


def test_no_test_or_benchmark_reads_the_repository_sample_folder() -> None:
    """Tests build their workspaces from the package's sample data (its state is the user's); the one
    test that guards the tracked folder against drift reads it and nothing else."""
    guard = REPO / "tests" / "environments" / "sample" / "test_sample_workspace.py"
    pattern = re.compile(r"/\s*[\"']sample_workspace[\"']")
    offenders = [
        p.relative_to(REPO).as_posix()
        for folder in ("tests", "bench")
        for p in (REPO / folder).rglob("*.py")
        if p != guard and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


@pytest.mark.parametrize("sample", [True, False])
def test_init_prints_a_next_step_that_works_from_here(tmp_path: Path, sample: bool) -> None:
    args = ["init", "ws", "--sample"] if sample else ["init", "ws"]
    proc = run_ovtui(*args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("workspace ready: ws\n")
    if sample:
        assert "add cases" not in proc.stdout  # the sample has its cases
        command = re.search(r"`(ovtui train [^`]*)`", proc.stdout)
        assert command is not None
        trained = run_ovtui(*shlex.split(command.group(1))[1:], "--no-eval", "--epochs", "1", cwd=tmp_path)
        assert trained.returncode == 0, trained.stderr
    else:
        assert "add cases to ws/datasets/<name>/{train,validation,test}.jsonl" in proc.stdout
        config = (tmp_path / "ws" / "ovtui.toml").read_text(encoding="utf-8")
        assert "validation = 0.2" in config and 'sealed = [\n    "test",\n]' in config


def test_train_names_the_workspace_and_prints_an_openable_report_path(tmp_path: Path) -> None:
    assert run_ovtui("init", "ws", "--sample", cwd=tmp_path).returncode == 0
    proc = run_ovtui("train", "--epochs", "1", "--no-eval", "--approve", "all", cwd=tmp_path / "ws")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == f"ovtui train · {(tmp_path / 'ws').resolve()} · backend offline"
    outside = run_ovtui("train", "ws", "--epochs", "1", "--no-eval", "--approve", "all", cwd=tmp_path)
    assert outside.stdout.splitlines()[0].startswith("ovtui train · ws · ")
    report = re.search(r"^report: (.+)$", outside.stdout, re.M)
    assert report is not None and report.group(1).startswith("ws/runs/")
    assert (tmp_path / report.group(1)).is_file()


@pytest.mark.parametrize("where_to", ["W8", "sub/dir/W11"])
def test_init_of_a_relative_path_writes_the_workspace_there_not_nested_below_it(
    tmp_path: Path, where_to: str
) -> None:
    proc = run_ovtui("init", where_to, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / where_to / "ovtui.toml").is_file()
    assert not (tmp_path / where_to / where_to).exists()
    checked = run_ovtui("check", where_to, cwd=tmp_path)
    assert "not a workspace" not in checked.stdout + checked.stderr
