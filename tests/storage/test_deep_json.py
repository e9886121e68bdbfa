"""JSON nested deeper than ovtui reads (``[`` × 100,000) in any file ovtui reads is a named problem,
never a RecursionError: a memory's fields, a plan waiting for review, a history record, the
journal, the use ledger (its log, its summary, an older ovtui's hotness summary), a cached answer,
a memory type declaration, a recorded rollout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_support import run_ovtui
from workspace_support import build_sample_workspace

from ovtui.core.bounded_json import MAX_JSON_DEPTH, JsonError, parse_json
from ovtui.core.errors import ConfigError, OvtuiError
from ovtui.llm.cache import ResponseCache
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import Use
from ovtui.memory.types import load_declarations
from ovtui.storage.paths import WorkspacePaths

DEEP = "[" * 100_000


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_the_parser_takes_its_depth_and_names_anything_deeper() -> None:
    assert parse_json(_nested(MAX_JSON_DEPTH - 1), source="x") is not None
    with pytest.raises(JsonError) as raised:
        parse_json(DEEP, source="some/file.json")
    assert raised.value.too_deep and isinstance(raised.value, ValueError)
    assert str(raised.value).startswith(f"some/file.json: JSON nested deeper than {MAX_JSON_DEPTH} levels")


def test_deep_json_in_every_file_of_a_workspace_is_named_by_check_and_stops_nothing(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    done = run_ovtui("train", str(root), "--epochs", "1", "--approve", "all", "--no-eval", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = next(p for p in (root / "history").iterdir() if p.is_dir())
    (record / "memory_diff.json").write_text(DEEP)
    (root / ".ovtui/pending").mkdir(parents=True, exist_ok=True)
    (root / ".ovtui/pending/deep.json").write_text(DEEP)
    (root / ".ovtui/journal").mkdir(parents=True, exist_ok=True)
    (root / ".ovtui/journal/20260101T000000000000_abcdef.json").write_text(DEEP)
    memory = root / "memories/experiences/deep_fields.md"
    memory.write_text(f'A body.\n\n<!-- MEMORY_FIELDS\n{{"x": {DEEP}}}\n-->')
    (root / "history/index.jsonl").write_text(DEEP + "\n")

    checked = run_ovtui("check", str(root), cwd=tmp_path)
    out = checked.stdout + checked.stderr
    assert checked.returncode == 1 and "Recursion" not in out and "Traceback" not in out, out
    assert "memories/experiences/deep_fields.md:4: MEMORY_FIELDS is JSON nested deeper than" in out
    assert ".ovtui/pending/deep.json:1: not a pending plan, skipped by Review:" in out
    assert "discarded 1 unfinished journal entry" in checked.stderr  # kept aside, never replayed
    assert (root / ".ovtui/journal/20260101T000000000000_abcdef.discarded").is_file()

    shown = run_ovtui("history", "show", record.name, "-w", str(root), cwd=tmp_path)
    assert shown.returncode == 2 and shown.stderr.count("\n") == 1
    assert f"history/{record.name}/memory_diff.json: not a valid memory_diff record" in shown.stderr
    listed = run_ovtui("history", str(root), cwd=tmp_path)  # the index is rebuilt from the folders
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    trained = run_ovtui("train", str(root), "--epochs", "1", "--approve", "all", "--no-eval", cwd=tmp_path)
    assert trained.returncode == 0 and "Traceback" not in trained.stderr, trained.stderr


def test_a_deep_cached_answer_is_a_miss(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / ".ovtui" / "llm_cache", root=tmp_path)
    cache.put("ab" + "0" * 62, "stage", "model", {"answer": 1})
    assert cache.get("ab" + "0" * 62) == {"answer": 1}
    next((tmp_path / ".ovtui" / "llm_cache").rglob("*.json")).write_text(DEEP)
    assert cache.get("ab" + "0" * 62) is None


def test_a_deep_memory_type_declaration_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text(DEEP)
    with pytest.raises(ConfigError, match=r"deep\.json.*nested deeper"):
        load_declarations([("a test", tmp_path)])


def test_a_deep_recorded_rollout_is_a_named_line(tmp_path: Path) -> None:
    nothing = {"task_id": "1", "tool_calls": [], "assistant_texts": [], "termination": "agent_stop"}
    (tmp_path / "r.jsonl").write_text(DEEP + "\n" + json.dumps(nothing) + "\n")
    done = run_ovtui("env", "score", "tau2-airline", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 1 and "Recursion" not in done.stderr
    assert done.stderr.startswith("r.jsonl:1: JSON nested deeper than")
    assert json.loads(done.stdout.splitlines()[1])["reward"] == 1.0


def test_a_deep_line_of_the_use_ledger_is_skipped_and_a_deep_summary_is_named(tmp_path: Path) -> None:
    ledger = UseLedger(WorkspacePaths(tmp_path))
    ledger.record([Use("u1", "session:a")])
    with ledger.path.open("ab") as log:
        log.write(DEEP.encode() + b"\n")  # a line no parser takes: skipped like a line cut by a crash
    ledger.record([Use("u1", "session:b")])
    assert ledger.usage()["u1"].count == 2
    for summary, what in ((ledger.summary_path, "use ledger"), (ledger.legacy_paths[1], "hotness")):
        summary.write_text(DEEP)
        named = rf"^\.ovtui/{summary.name} is not a {what} summary .*nested deeper"
        with pytest.raises(OvtuiError, match=named):
            UseLedger(WorkspacePaths(tmp_path)).usage()
        summary.unlink()


def test_train_on_a_workspace_whose_ledger_summary_is_too_deep_says_so_and_goes_on(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / ".ovtui").mkdir(exist_ok=True)
    (root / ".ovtui/ledger.json").write_text(DEEP)
    done = run_ovtui("train", str(root), "--epochs", "1", "--approve", "all", "--no-eval", cwd=tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0 and "Recursion" not in out and "Traceback" not in out, out
    assert "memory use not recorded: .ovtui/ledger.json is not a use ledger summary" in done.stderr
    checked = run_ovtui("check", str(root), cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert ".ovtui/ledger.json:1: is not a use ledger summary (its JSON: JSON nested deeper" in checked.stdout
