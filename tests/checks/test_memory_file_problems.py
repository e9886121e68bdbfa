"""A broken memory file is named with what is wrong and where; nothing unreadable is skipped silently."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import run_ovtui
from workspace_support import build_sample_workspace

from ovtui.cli.main import main

Captured = pytest.CaptureFixture[str]
BODY = "## Situation\n- a customer asks\n\n"


@pytest.mark.parametrize(
    ("trailer", "expected"),
    [
        (
            '<!-- MEMORY_FIELDS {"experience_name": "broken"}\n-->',
            "broken.md:4: the MEMORY_FIELDS JSON must start on the line after '<!-- MEMORY_FIELDS'",
        ),
        (
            '<!-- MEMORY_FIELDS\n{"experience_name": "broken"}\n',
            "broken.md:4: MEMORY_FIELDS comment is never closed",
        ),
        (
            '<!-- MEMORY_FIELDS\n{"experience_name": "broken"}\n-->\n\nmore text',
            "broken.md:8: text follows the MEMORY_FIELDS comment: it must be the last thing in the file",
        ),
        (
            '<!-- MEMORY_FIELDS\n{"experience_name": "broken",}\n-->',
            "broken.md:5: MEMORY_FIELDS is not valid JSON",
        ),
    ],
)
def test_a_broken_trailer_is_named_by_what_is_wrong_and_its_line(
    tmp_path: Path, capsys: Captured, trailer: str, expected: str
) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "memories/experiences/broken.md").write_text(BODY + trailer, encoding="utf-8")
    assert main(["check", str(root)]) == 1
    problems = [line for line in capsys.readouterr().out.splitlines() if "broken.md" in line]
    assert len(problems) == 1 and expected in problems[0], problems


def test_a_file_saved_with_windows_line_ends_reads(tmp_path: Path, capsys: Captured) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    text = BODY + '<!-- MEMORY_FIELDS\n{"experience_name": "crlf"}\n-->\n'
    (root / "memories/experiences/crlf.md").write_bytes(text.replace("\n", "\r\n").encode())
    assert main(["check", str(root)]) == 0, capsys.readouterr().out


def test_plain_text_without_fields_is_a_note_not_silence(tmp_path: Path, capsys: Captured) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "memories/experiences/plain.md").write_text("just some words\n", encoding="utf-8")
    assert main(["check", str(root)]) == 0
    assert (
        "note: memories/experiences/plain.md:1: "
        "no MEMORY_FIELDS comment: read as a hand-written note with no fields"
        in capsys.readouterr().out.splitlines()
    )


def test_a_fresh_sample_workspace_checks_without_a_wall_of_notes(tmp_path: Path) -> None:
    assert run_ovtui("init", "ws", "--sample", cwd=tmp_path).returncode == 0
    proc = run_ovtui("check", "ws", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout
    notes = [line for line in proc.stdout.splitlines() if line.startswith("note:")]
    assert len(notes) == 1 and "`--notes` lists them" in notes[0], notes
    listed = run_ovtui("check", "ws", "--notes", cwd=tmp_path)
    assert len([line for line in listed.stdout.splitlines() if line.startswith("note:")]) > 1


def test_train_says_which_experience_it_left_out(tmp_path: Path) -> None:
    assert run_ovtui("init", "ws", "--sample", cwd=tmp_path).returncode == 0
    (tmp_path / "ws/memories/experiences/broken.md").write_text(
        BODY + '<!-- MEMORY_FIELDS\n{"experience_name": "broken",}\n-->', encoding="utf-8"
    )
    proc = run_ovtui("train", "ws", "--epochs", "0", "--no-eval", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning: experience left out of this run: memories/experiences/broken.md:5:" in proc.stderr
