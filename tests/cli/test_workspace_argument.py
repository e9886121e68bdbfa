"""Every command takes the workspace the same two ways, says its own usage, and names the datasets."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import run_ovtui

from ovtui.cli.init import init_workspace


@pytest.fixture(scope="module")
def here(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cli")
    init_workspace(folder / "W", sample=True)
    return folder


@pytest.mark.parametrize(
    "command",
    [("check",), ("history",), ("review", "list"), ("revert", "no-such-record"), ("eval", "--trials", "1")],
)
def test_a_command_takes_the_workspace_as_a_positional_or_as_w_alike(
    here: Path, command: tuple[str, ...]
) -> None:
    positional = run_ovtui(*command, "W", cwd=here)
    option = run_ovtui(*command, "-w", "W", cwd=here)
    assert "unrecognized arguments" not in positional.stderr
    assert "not a workspace" not in positional.stderr + positional.stdout
    run_folder = re.compile(r"runs/[^/]+/")  # each run has its own
    assert (positional.returncode, run_folder.sub("", positional.stdout)) == (
        option.returncode,
        run_folder.sub("", option.stdout),
    )


def test_a_usage_problem_is_told_with_the_usage_of_its_own_command(here: Path) -> None:
    proc = run_ovtui("review", "show", "some-plan", "1", "W", cwd=here)
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: ovtui review show")
    assert "unrecognized arguments: W" in proc.stderr


def test_the_workspace_given_two_different_ways_is_refused(here: Path) -> None:
    proc = run_ovtui("check", "W", "-w", "elsewhere", cwd=here)
    assert proc.returncode == 2
    assert "the workspace is given twice" in proc.stderr


def test_eval_help_describes_every_option(here: Path) -> None:
    proc = run_ovtui("eval", "--help", cwd=here)
    described = {
        line.split()[0]
        for line in proc.stdout.splitlines()
        if line.startswith("  -") and len(line.split()) > 2
    }
    assert {"--dataset", "--split", "--trials", "--workspace"} <= described


def test_an_unknown_dataset_lists_the_datasets_there_are(here: Path) -> None:
    proc = run_ovtui("eval", "W", "--dataset", "nope", cwd=here)
    assert proc.returncode == 2
    assert "datasets/nope/validation.jsonl: dataset split not found" in proc.stderr
    assert "the datasets here: support (test, train, validation)" in proc.stderr
