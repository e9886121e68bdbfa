"""Typos a new user makes, each answered with what was probably meant, all of them at once."""

from __future__ import annotations

from pathlib import Path

from cli_support import run_ovtui
from workspace_support import build_sample_workspace


def test_a_misspelt_command_is_not_taken_for_a_folder(tmp_path: Path) -> None:
    done = run_ovtui("trian", "ws", cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == "ovtui: error: 'trian' is not a command or a folder — did you mean 'train'?"


def test_a_folder_is_still_a_workspace_whatever_its_name(tmp_path: Path) -> None:
    (tmp_path / "trian").mkdir()  # a folder of that name: the app on it, as ever (not a workspace here)
    done = run_ovtui("trian", cwd=tmp_path, timeout=60)
    assert "did you mean" not in done.stderr


def test_every_config_problem_is_said_at_once_with_what_it_meant(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    config = root / "ovtui.toml"
    text = config.read_text(encoding="utf-8")
    assert 'backend = "offline"' in text and "epochs = " in text
    text = text.replace('backend = "offline"', 'backend = "offlne"').replace("epochs = ", "epohcs = ")
    config.write_text(text + "\n[trainr]\nbatch_size = 4\n", encoding="utf-8")
    for command in (["check", str(root)], ["train", str(root)]):
        done = run_ovtui(*command, cwd=tmp_path, timeout=60)
        said = done.stdout + done.stderr
        assert done.returncode != 0, command
        assert "[trainer.epohcs]" in said and "did you mean 'epochs'?" in said, said
        assert "[trainr] unknown table — did you mean 'trainer'?" in said, said
        assert "unknown backend 'offlne' — did you mean 'offline'?" in said, said
