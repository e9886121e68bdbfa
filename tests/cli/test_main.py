"""The ``ovtui`` command: history, revert, check, errors as one line, and a real subprocess run."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest
from plan_support import append_line, apply, upsert

import ovtui.cli.main
from ovtui.cli.main import build_parser, main
from ovtui.core.context import ApplyOptions
from ovtui.memory.history import HistoryStore
from ovtui.memory.store import MemoryStore
from ovtui.storage.journal import FileOp, Journal, render_manifest

Captured = pytest.CaptureFixture[str]

# A case of the sample environment (the default agent's): `check` validates cases against it.
CASE = {
    "name": "refund_1",
    "task_signature": "refund",
    "input": {"user_query": "where is my refund for K4P7Q2?"},
    "rubric": {
        "name": "r",
        "criteria": [{"name": "refunded", "metadata": {"kind": "required_call", "tool": "refund_payment"}}],
    },
}


@pytest.fixture
def applied(store: MemoryStore) -> tuple[str, str]:
    item = append_line(store, "refund_status", "- quote the tool's date")
    first = apply(store, item, options=ApplyOptions(plan_id="p-1"))
    second = apply(store, upsert(store, "gift_cards", "gift cards"))
    return first.history_id or "", second.history_id or ""


def test_history_lists_newest_first(tmp_workspace: Path, applied: tuple[str, str], capsys: Captured) -> None:
    assert main(["history", str(tmp_workspace)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("ID")
    assert out[1].startswith(applied[1]) and "gift_cards.md" in out[1] and "+1 ~0 -0" in out[1]
    assert out[2].startswith(applied[0]) and "refund_status.md" in out[2]


def test_history_json_and_filters(tmp_workspace: Path, applied: tuple[str, str], capsys: Captured) -> None:
    assert main(["history", "--workspace", str(tmp_workspace), "--json", "--grep", "TOOL'S DATE"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["id"] for r in rows] == [applied[0]] and rows[0]["plan_id"] == "p-1"
    assert main(["history", str(tmp_workspace), "--kind", "revert"]) == 0
    assert capsys.readouterr().out.strip() == "no history records"
    assert main(["history", str(tmp_workspace), "--limit", "1", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 1


def test_history_show_prints_the_diff(
    tmp_workspace: Path, applied: tuple[str, str], capsys: Captured
) -> None:
    assert main(["history", "show", applied[0], "--workspace", str(tmp_workspace)]) == 0
    out = capsys.readouterr().out
    assert f"record    {applied[0]}" in out and "plan      p-1" in out
    assert "+++ b/memories/experiences/refund_status.md" in out
    assert "+- quote the tool's date" in out and '-  "version": 1' in out and '+  "version": 2' in out
    assert main(["history", "show", applied[1][-6:], "-w", str(tmp_workspace), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["total_adds"] == 1


def test_revert_and_its_conflict(
    tmp_workspace: Path, store: MemoryStore, applied: tuple[str, str], capsys: Captured
) -> None:
    apply(store, append_line(store, "refund_status", "- later edit"))
    assert main(["revert", applied[0], "--workspace", str(tmp_workspace)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ovtui: error: cannot revert")
    assert "memories/experiences/refund_status.md" in err and "Traceback" not in err

    assert main(["revert", applied[1], "-w", str(tmp_workspace), "--dry-run"]) == 0
    assert "dry run: would revert" in capsys.readouterr().out
    assert (tmp_workspace / "memories/experiences/gift_cards.md").exists()
    assert main(["revert", applied[1], "-w", str(tmp_workspace)]) == 0
    out = capsys.readouterr().out
    assert f"reverted {applied[1]} (0 written, 1 deleted)" in out
    assert not (tmp_workspace / "memories/experiences/gift_cards.md").exists()
    assert main(["revert", applied[0], "-w", str(tmp_workspace), "--force"]) == 0
    assert "forced over later changes to: memories/experiences/refund_status.md" in capsys.readouterr().out


def test_check_ok(tmp_workspace: Path, capsys: Captured) -> None:
    dataset = tmp_workspace / "datasets" / "support"
    dataset.mkdir(parents=True)
    (dataset / "train.jsonl").write_text(
        json.dumps(CASE) + "\n\n" + json.dumps(CASE) + "\n", encoding="utf-8"
    )
    (tmp_workspace / "ovtui.toml").write_text('[workspace]\nuser = "default"\n', encoding="utf-8")
    assert main(["check", str(tmp_workspace)]) == 0
    out = capsys.readouterr().out.splitlines()
    # Notes (lines the sample agent cannot act on) come first; they do not fail the check.
    assert all(line.startswith("note: ") for line in out[:-1])
    summary = "ok: 5 memory files (experiences 3, trajectories 2), 2 dataset cases, config: ovtui.toml"
    assert out[-1] == summary


def test_check_lists_each_problem_with_file_and_line(tmp_workspace: Path, capsys: Captured) -> None:
    dataset = tmp_workspace / "datasets" / "support"
    dataset.mkdir(parents=True)
    bad_case = {k: v for k, v in CASE.items() if k != "rubric"}
    (dataset / "test.jsonl").write_text(
        json.dumps(CASE) + "\n" + json.dumps(bad_case) + "\n{oops\n", encoding="utf-8"
    )
    (tmp_workspace / "ovtui.toml").write_text(
        "[llm]\nbackend = 'offline'\nmax_concurrency = 0\n", encoding="utf-8"
    )
    broken = tmp_workspace / "memories/experiences/refund_status.md"
    broken.write_text(broken.read_text(encoding="utf-8").replace('"version": 1', '"version": "one"'))
    wrong = tmp_workspace / "memories/trajectories/cancel_reservation_20261129120000.md"
    wrong.write_text(wrong.read_text(encoding="utf-8").replace('"success"', '"great"'))
    assert main(["check", str(tmp_workspace)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert "ovtui.toml:3: [llm.max_concurrency] Input should be greater than or equal to 1" in lines
    assert "datasets/support/test.jsonl:2: not a valid case: rubric: Field required" in lines
    assert any(line.startswith("datasets/support/test.jsonl:3: not valid JSON") for line in lines)
    assert any(
        line.startswith("memories/experiences/refund_status.md:") and "'version'" in line for line in lines
    )
    assert any(
        line.startswith("memories/trajectories/cancel_reservation_20261129120000.md:") and "'great'" in line
        for line in lines
    )
    assert lines[-1].startswith("5 problem(s)")


def test_kernel_errors_are_one_line_with_exit_2(tmp_path: Path, capsys: Captured) -> None:
    assert main(["history", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"ovtui: error: {tmp_path} is not an ovtui workspace (no ovtui.toml and no memories/): "
        f"create one with `ovtui init {tmp_path}`\n"
    )
    assert main(["revert", "nope", "-w", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err


def test_usage_errors_exit_2(capsys: Captured) -> None:
    assert main(["history", "show"]) == 2
    assert main(["revert"]) == 2
    assert "usage" in capsys.readouterr().err


def test_start_up_finishes_an_interrupted_apply(
    tmp_workspace: Path, store: MemoryStore, capsys: Captured
) -> None:
    journal = Journal(store.paths)
    ops = [FileOp("memories/experiences/recovered.md", "write", "written by recovery\n", None)]
    journal.commit(ops)  # then pretend the process died before finishing it:
    (tmp_workspace / "memories/experiences/recovered.md").unlink()
    txid = "20260101T000000000000_abcdef"
    journal.dir.joinpath(f"{txid}.json").write_text(render_manifest(txid, ops), encoding="utf-8")
    assert main(["history", str(tmp_workspace)]) == 0
    assert "recovery: completed 1 interrupted apply" in capsys.readouterr().err
    assert (tmp_workspace / "memories/experiences/recovered.md").read_text() == "written by recovery\n"


def test_no_command_opens_the_app(tmp_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[Path] = []

    def run_app(args: argparse.Namespace) -> int:
        opened.append(args.workspace)
        return 0

    monkeypatch.setattr(ovtui.cli.main, "run_app", run_app)
    assert main([str(tmp_workspace)]) == 0
    assert main([]) == 0
    assert opened == [tmp_workspace, Path(".")]


def test_parser_has_every_command() -> None:
    choices = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert {"app", "history", "revert", "check"} <= set(choices or ())


def test_real_subprocess(tmp_workspace: Path, applied: tuple[str, str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "ovtui", "history", str(tmp_workspace), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert [row["id"] for row in json.loads(proc.stdout)] == [applied[1], applied[0]]
    assert HistoryStore(MemoryStore.open(tmp_workspace).paths).get(applied[0]).review.plan_id == "p-1"
