"""ovtui.toml read and written: ovtui's sections and every plug-in's own table, each problem named
at once with a suggestion for a misspelt name, and a plug-in's table written back as it was."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from ovtui.core.errors import ConfigError
from ovtui.environments.tau2_airline.config import Tau2Config, UserSimulatorConfig
from ovtui.storage.config_file import load_config, save_config


def _problems(root: Path, text: str) -> list[str]:
    (root / "ovtui.toml").write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_config(root)
    head, *lines = str(raised.value).splitlines()
    assert head == f"{root / 'ovtui.toml'}: invalid configuration"
    return [line.strip() for line in lines]


def test_every_problem_is_said_at_once_with_what_was_meant(tmp_path: Path) -> None:
    problems = _problems(tmp_path, "[trainer]\nepohcs = 3\n\n[trainr]\nepochs = 2\n\n[tau2]\nmax_turns = 0\n")
    assert "[trainer.epohcs] Extra inputs are not permitted — did you mean 'epochs'?" in problems
    assert "[trainr] unknown table — did you mean 'trainer'?" in problems
    assert "[tau2.max_turns] Input should be greater than or equal to 1" in problems
    assert len(problems) == 3


def test_a_table_no_plug_in_declares_is_named(tmp_path: Path) -> None:
    assert _problems(tmp_path, "[dicedesk]\nsides = 6\n") == ["[dicedesk] unknown table"]


def test_a_plug_in_reads_its_table_and_a_save_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "ovtui.toml").write_text(
        '[tau2]\nreplay = "recorded.jsonl"\n\n[user_simulator]\nmodel = "sim"\n\n[ui]\ntheme = "nord"\n',
        encoding="utf-8",
    )
    config = load_config(tmp_path)
    assert config.table(Tau2Config) == Tau2Config(replay="recorded.jsonl")
    assert config.has_table("user_simulator") and config.table(UserSimulatorConfig).model == "sim"
    config.ui.theme = "gruvbox"
    save_config(tmp_path, config)
    saved = tomllib.loads((tmp_path / "ovtui.toml").read_text(encoding="utf-8"))
    assert saved["tau2"] == {"replay": "recorded.jsonl"} and saved["user_simulator"] == {"model": "sim"}
    assert saved["ui"]["theme"] == "gruvbox"
    again = load_config(tmp_path)
    assert again.table(Tau2Config).replay == "recorded.jsonl"


def test_a_table_absent_reads_as_its_defaults(tmp_path: Path) -> None:
    config = load_config(tmp_path)  # no ovtui.toml at all
    assert config.table(Tau2Config) == Tau2Config() and not config.has_table("tau2")
