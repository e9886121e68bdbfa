"""``ovtui check`` reports bad ``[keys]``: an unknown binding id, or one key with two actions in a screen."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import run_ovtui


def _check(tmp_workspace: Path, keys: str) -> tuple[int, list[str]]:
    (tmp_workspace / "ovtui.toml").write_text(f'[review]\npolicy = "ask"\n\n[keys]\n{keys}', encoding="utf-8")
    proc = run_ovtui("check", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert "Traceback" not in proc.stderr
    return proc.returncode, proc.stdout.splitlines()


def test_a_remap_that_is_fine_passes(tmp_workspace: Path) -> None:
    code, out = _check(tmp_workspace, '"review.approve" = "y"\n"app.help" = "f1"\n')
    assert code == 0 and out[-1].startswith("ok: ")


def test_an_unknown_binding_id_is_named_with_its_line(tmp_workspace: Path) -> None:
    code, out = _check(tmp_workspace, '"review.approve" = "y"\n"review.aprove" = "z"\n')
    assert code == 1
    assert "ovtui.toml:6: [keys] 'review.aprove' is not a binding id (did you mean 'review.approve'?)" in out


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ('"review.approve" = "r"\n', "key 'r' has two actions in Review: review.approve, review.reject"),
        ('"review.reject" = "j"\n', "key 'j' has two actions in Review: list.down, review.reject"),
        ('"run.train" = "ctrl+q"\n', "key 'ctrl+q' has two actions in Run: app.quit, run.train"),
    ],
)
def test_two_actions_on_one_key_in_a_screen(tmp_workspace: Path, keys: str, expected: str) -> None:
    code, out = _check(tmp_workspace, keys)
    assert code == 1
    assert any(line.startswith("ovtui.toml:5: [keys] ") and line.endswith(expected) for line in out), out


def test_the_same_key_on_two_screens_is_fine(tmp_workspace: Path) -> None:
    code, out = _check(tmp_workspace, '"history.filter" = "a"\n')  # "a" approves only on Review
    assert code == 0, out
