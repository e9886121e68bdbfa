"""Opening and creating workspaces: ``ovtui init``, refusal of a non-workspace, recovery on open."""

from __future__ import annotations

from pathlib import Path

import pytest
from workspace_support import memory_of

from ovtui.cli.main import main
from ovtui.core.errors import OvtuiError
from ovtui.storage.journal import FileOp, Journal, render_manifest
from ovtui.wiring.workspace import Workspace


def test_init_makes_a_workspace_that_checks_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "new"
    assert main(["init", str(root)]) == 0
    assert (root / "ovtui.toml").is_file() and (root / "memories/experiences").is_dir()
    assert main(["check", str(root)]) == 0
    config = (root / "ovtui.toml").read_text()

    assert main(["init", str(root)]) == 2  # never over an existing workspace
    assert "already a workspace" in capsys.readouterr().err
    assert (root / "ovtui.toml").read_text() == config


def test_init_sample_is_ready_to_train(tmp_path: Path) -> None:
    root = tmp_path / "sample"
    assert main(["init", str(root), "--sample"]) == 0
    workspace = Workspace(root)
    assert workspace.reading.experiences().policies
    assert (root / "datasets/support/train.jsonl").read_text().strip()


def test_a_folder_that_is_not_a_workspace_is_refused_untouched(tmp_path: Path) -> None:
    with pytest.raises(OvtuiError, match=r"not an ovtui workspace.*ovtui init"):
        Workspace(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_opening_finishes_an_interrupted_apply(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    assert main(["init", str(root)]) == 0
    ops = [FileOp("memories/experiences/recovered.md", "write", "## Situation\n- recovered\n", None)]
    txid = "20260101T000000000000_abcdef"
    journal = Journal(memory_of(Workspace(root)).paths)
    journal.dir.mkdir(parents=True, exist_ok=True)
    # A manifest made durable, then the process died before any target was written.
    journal.dir.joinpath(f"{txid}.json").write_text(render_manifest(txid, ops), encoding="utf-8")

    workspace = Workspace(root)
    assert workspace.recovered and "completed 1 interrupted apply" in workspace.recovered
    assert [p.name for p in workspace.reading.experiences().policies] == ["recovered"]
