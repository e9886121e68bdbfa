"""A plan item the apply refuses is an error of the run (the CLI's epoch line, ``report.json``'s
``errors``, which the app's Run screen shows), and ``ovtui check`` names the file behind it: a
memory file whose name differs from ovtui's only in case."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import run_ovtui
from workspace_support import build_sample_workspace


def test_items_refused_for_a_file_named_in_upper_case_are_errors_and_check_names_the_file(
    tmp_path: Path,
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "memories/experiences/Refund_Request.md").write_text("A note about refunds.\n")
    done = run_ovtui("train", str(root), "--epochs", "1", "--approve", "all", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    epoch = next(line for line in done.stdout.splitlines() if line.startswith("[train_epoch]"))
    report = json.loads(next((root / "runs").glob("*/report.json")).read_text())
    refused = [e for e in report["errors"] if "(Refund_Request) refused" in e]
    assert refused and f"errors={len(report['errors'])}" in epoch
    assert report["stages"][1]["errors"] == len(report["errors"])
    checked = run_ovtui("check", str(root), cwd=tmp_path)
    assert checked.returncode == 1
    assert (
        "memories/experiences/Refund_Request.md:1: ovtui writes this memory as refund_request.md"
        in checked.stdout
    )
    assert "rename Refund_Request.md to refund_request.md" in checked.stdout


def test_check_names_two_files_whose_names_differ_only_in_case(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "memories/experiences/Seat_Selection.md").write_text("Seats.\n")
    checked = run_ovtui("check", str(root), cwd=tmp_path)
    assert checked.returncode == 1
    problems = [line for line in checked.stdout.splitlines() if "ignoring case" in line]
    assert problems == [
        "memories/experiences/Seat_Selection.md:1: collides with seat_selection.md ignoring case: both "
        "name one memory; merge this file into seat_selection.md and remove Seat_Selection.md"
    ]
