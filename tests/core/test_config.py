"""ovtui.toml: values of the wrong type or out of bounds, and files too large, are one clear error
naming the file (and, in `ovtui check`, the line) — never a traceback, never read whole."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ovtui.cli.main import main
from ovtui.core.bounds import MAX_CONFIG_BYTES
from ovtui.core.errors import ConfigError
from ovtui.storage.config_file import load_config


def _config(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "ovtui.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("[llm]\nmax_concurrency = true\n", "llm.max_concurrency"),
        ("[llm]\nmax_concurrency = 0\n", "llm.max_concurrency"),
        ("[llm]\nmax_concurrency = 257\n", "llm.max_concurrency"),
        ('[llm]\nmax_concurrency = "8"\n', "llm.max_concurrency"),
        ("[trainer]\nepochs = 100000000000000000000\n", "trainer.epochs"),
        ("[trainer]\nepochs = 1001\n", "trainer.epochs"),
        ("[trainer]\nbatch_size = 1.5\n", "trainer.batch_size"),
        ("[trainer]\nmax_wait_seconds = 0\n", "trainer.max_wait_seconds"),
        ("[llm]\ncache = 1\n", "llm.cache"),
        ('[llm]\napi_key_env = "A B"\n', "llm.api_key_env"),
        ('[review]\npolicy = "confidence>=abc"\n', "review.policy"),
        ('[review]\npolicy = "confidence>=1.01"\n', "review.policy"),
        ('[review]\npolicy = "confidence>=nan"\n', "review.policy"),
        ('[workspace]\nusers = ["../x"]\n', "workspace.users"),
        ('[workspace]\nusers = ["bob", "bob"]\n', "workspace.users"),
    ],
)
def test_wrong_types_and_values_out_of_bounds_are_refused_by_field(
    tmp_path: Path, text: str, field: str
) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value).startswith(f"{path}: invalid configuration")
    assert f"[{field}]" in str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "[llm]\nmax_concurrency = 256\n",
        "[llm]\nmax_concurrency = 1\ntimeout = 5\n",  # an integer is a fine number of seconds
        "[trainer]\nepochs = 1000\n",
        '[review]\npolicy = "confidence>=0.75"\n',
        '[review]\npolicy = "confidence>=1"\n',
        '[workspace]\nuser = "alice"\nusers = ["bob", "carol-2"]\n',
    ],
)
def test_values_at_the_bounds_are_accepted(tmp_path: Path, text: str) -> None:
    _config(tmp_path, text)
    load_config(tmp_path)


def test_a_config_at_the_size_limit_loads_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    head = "[trainer]\nepochs = 2\n#"
    path = _config(tmp_path, head + "x" * (MAX_CONFIG_BYTES - len(head) - 1) + "\n")
    assert path.stat().st_size == MAX_CONFIG_BYTES
    assert load_config(tmp_path).trainer.epochs == 2
    path.write_text(head + "x" * (MAX_CONFIG_BYTES - len(head)) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=f"larger than the {MAX_CONFIG_BYTES} byte limit"):
        load_config(tmp_path)


def test_an_endless_config_is_not_read_whole(tmp_path: Path) -> None:
    """/dev/zero reports size 0 and never ends: only a bounded read returns."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "ovtui.toml").symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="larger than"):
        load_config(tmp_path)


def test_check_names_the_line_of_a_bad_policy_and_train_refuses_it_in_one_line(
    tmp_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _config(tmp_workspace, '[trainer]\nepochs = 1\n\n[review]\npolicy = "confidence>=abc"\n')
    assert main(["check", str(tmp_workspace)]) == 1
    out = capsys.readouterr().out
    assert "ovtui.toml:5: [review.policy]" in out and "confidence>=X needs a number" in out
    done = subprocess.run(
        [sys.executable, "-m", "ovtui", "train", str(tmp_workspace)], capture_output=True, text=True
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "ovtui.toml" in done.stderr and "review.policy" in done.stderr


def test_check_reports_an_oversized_config_in_one_line(
    tmp_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_workspace / "ovtui.toml").write_bytes(b"#" * (MAX_CONFIG_BYTES + 1))
    assert main(["check", str(tmp_workspace)]) == 1
    out = capsys.readouterr().out
    assert f"ovtui.toml:1: the configuration is {MAX_CONFIG_BYTES + 1} bytes" in out


def test_the_owner_among_the_other_users_is_refused_naming_it(tmp_path: Path) -> None:
    _config(tmp_path, '[workspace]\nuser = "alice"\nusers = ["alice"]\n')
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert "[workspace] users names 'alice', the owner" in str(caught.value)
    assert str(caught.value).startswith(f"{tmp_path / 'ovtui.toml'}: invalid configuration")
