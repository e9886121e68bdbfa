"""``ovtui check`` reports bad ``[keys]``: an unknown binding id, or one key with two actions in a screen."""

from __future__ import annotations

from pathlib import Path

from cli_support import run_ovtui


def _check(tmp_workspace: Path, keys: str) -> tuple[int, list[str]]:
    config = f'[review]\npolicy = "ask"\n\n[keys]\n{keys}'
    (tmp_workspace / "ovtui.toml").write_text(config, encoding="utf-8")
    proc = run_ovtui("check", str(tmp_workspace), cwd=tmp_workspace.parent)
    assert "Traceback" not in proc.stderr
    return proc.returncode, proc.stdout.splitlines()


def test_remaps_that_are_fine_pass(tmp_workspace: Path) -> None:
    # "a" approves on Review only, so History may use it; f1 is free everywhere.
    code, out = _check(tmp_workspace, '"review.approve" = "y"\n"app.help" = "f1"\n"history.filter" = "a"\n')
    assert code == 0 and out[-1].startswith("ok: "), out


def test_unknown_ids_and_keys_with_two_actions_are_named_with_their_lines(tmp_workspace: Path) -> None:
    keys = (
        '"review.aprove" = "z"\n'  # line 5
        '"review.approve" = "r"\n'  # line 6: the reject key
        '"history.filter" = "j"\n'  # line 7: the lists' down key, inside History
        '"run.train" = "ctrl+q"\n'  # line 8: the app's quit key, inside Run
    )
    code, out = _check(tmp_workspace, keys)
    assert code == 1
    assert [line for line in out if line.startswith("ovtui.toml:")] == [
        "ovtui.toml:5: [keys] 'review.aprove' is not a binding id (did you mean 'review.approve'?)",
        "ovtui.toml:7: [keys] key 'j' has two actions in History: history.filter, list.down",
        "ovtui.toml:6: [keys] key 'r' has two actions in Review: review.approve, review.reject",
        "ovtui.toml:8: [keys] key 'ctrl+q' has two actions in Run: app.quit, run.train",
    ]
    assert out[-1].startswith("4 problem(s); ")
