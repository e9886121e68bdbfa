"""``ovtui report``: without ``--html`` it prints the run's summary; an HTML file in a folder that
does not exist is said as exactly that."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import run_ovtui
from workspace_support import build_sample_workspace

from ovtui.wiring.workspace import Workspace


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_sample_workspace(tmp_path_factory.mktemp("report") / "ws")
    done = run_ovtui("train", str(root), "--epochs", "1", "--approve", "all", cwd=root.parent)
    assert done.returncode == 0, done.stderr
    return root


def test_report_without_html_prints_the_summary(trained: Path) -> None:
    report = Workspace(trained).reading.run_report()
    done = run_ovtui("report", "-w", str(trained), cwd=trained.parent, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith(f"train {report.run_id} · dataset support")
    assert report.summary() in done.stdout
    assert f"runs/{report.run_id}/report.json" in done.stdout


def test_an_html_file_in_a_missing_folder_says_the_folder_does_not_exist(trained: Path) -> None:
    missing = trained.parent / "no_such_folder"
    done = run_ovtui("report", "-w", str(trained), "--html", str(missing / "x.html"), cwd=trained.parent)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"the folder {missing} does not exist (make it first)"), done.stderr
    assert "symbolic link" not in done.stderr and not missing.exists()
