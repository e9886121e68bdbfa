"""``ovtui check`` names a configured tokenizer rank file that is missing or not the one its hash
says, each as one line at the key to fix (the token figures would be estimates)."""

from __future__ import annotations

from pathlib import Path

from cli_support import run_ovtui
from tokenizer_support import write_rank_file


def _check(root: Path, tokens: str) -> tuple[int, list[str]]:
    (root / "ovtui.toml").write_text(f'[review]\npolicy = "ask"\n\n[tokens]\n{tokens}', encoding="utf-8")
    proc = run_ovtui("check", str(root), cwd=root.parent)
    assert "Traceback" not in proc.stderr
    return proc.returncode, proc.stdout.splitlines()


def test_a_rank_file_that_matches_its_hash_passes(tmp_workspace: Path) -> None:
    sha = write_rank_file(tmp_workspace / "ranks.tiktoken")
    code, out = _check(tmp_workspace, f'rank_file = "ranks.tiktoken"\nrank_file_sha256 = "{sha}"\n')
    assert code == 0 and out[-1].startswith("ok: "), out


def test_a_missing_rank_file_is_one_line_at_its_key(tmp_workspace: Path) -> None:
    code, out = _check(tmp_workspace, 'encoding = "o200k_base"\nrank_file = "missing.tiktoken"\n')
    assert code == 1
    assert [line for line in out if line.startswith("ovtui.toml:")] == [
        "ovtui.toml:6: [tokens.rank_file] missing.tiktoken not found"
    ]


def test_a_wrong_hash_is_one_line_at_its_key(tmp_workspace: Path) -> None:
    sha = write_rank_file(tmp_workspace / "ranks.tiktoken")
    wrong = "0" * 64
    code, out = _check(tmp_workspace, f'rank_file = "ranks.tiktoken"\nrank_file_sha256 = "{wrong}"\n')
    assert code == 1
    assert [line for line in out if line.startswith("ovtui.toml:")] == [
        f"ovtui.toml:6: [tokens.rank_file_sha256] ranks.tiktoken has SHA-256 {sha}, not {wrong}"
    ]
