"""``ovtui train`` and ``ovtui eval`` as a user runs them: a real process on a copy of the sample."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from workspace_support import build_sample_workspace


def _ovtui(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [sys.executable, "-m", "ovtui", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240
    )


def test_train_prints_the_report_and_saves_it(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    proc = _ovtui("train", str(root), "--epochs", "2", "--approve", "all", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("[baseline_eval] cases=10 accuracy=") for line in lines)  # no epoch -1
    assert sum(line.startswith("[train_epoch]") for line in lines) == 2
    assert any(line.startswith("accuracy delta: +") for line in lines)
    [run] = list((root / "runs").iterdir())
    report = json.loads((run / "report.json").read_text())
    assert [s["stage"] for s in report["stages"]] == [
        "baseline_eval",
        "train_epoch",
        "train_epoch",
        "final_eval",
    ]
    assert report["backend"] == "offline" and report["history_ids"]

    assert report["split"] == "validation" and "scored on: support/validation" in proc.stdout
    evaluated = _ovtui("eval", str(root), cwd=tmp_path)  # the validation split, as the run scored it
    assert evaluated.returncode == 0, evaluated.stderr
    final = report["stages"][-1]
    assert f"passed={final['passed']}/{final['cases']}" in evaluated.stdout  # eval agrees with the run


def test_train_with_a_bad_dataset_line_names_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    train = root / "datasets" / "support" / "train.jsonl"
    lines = train.read_text().splitlines()
    lines[2] = '{"name": "broken"}'
    train.write_text("\n".join(lines) + "\n")
    proc = _ovtui("train", str(root), "--approve", "all", cwd=tmp_path)
    assert proc.returncode == 2
    assert "datasets/support/train.jsonl:3" in proc.stderr and "Traceback" not in proc.stderr
    assert train.read_text().splitlines()[2] == '{"name": "broken"}'  # the user's file is untouched


def test_train_names_a_case_colliding_experience_file_it_skipped(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    folder = root / "memories" / "experiences"
    twin = folder / "Conversation_Etiquette.md"
    twin.write_bytes((folder / "conversation_etiquette.md").read_bytes())
    proc = _ovtui("train", str(root), "--epochs", "1", "--no-eval", "--approve", "none", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (
        "warning: experience left out of this run: memories/experiences/Conversation_Etiquette.md: collides "
        "with conversation_etiquette.md ignoring case (both name one memory): skipped; `ovtui check` says "
        "how to merge them"
    ) in proc.stdout + proc.stderr
    assert twin.exists()  # named, never removed: the person merges it


def test_a_failed_runs_report_says_why(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    (root / "datasets" / "support" / "train.jsonl").unlink()
    proc = _ovtui("train", str(root), "--approve", "all", cwd=tmp_path)
    reason = (
        "datasets/support/train.jsonl: dataset split not found; the datasets here: support (test, validation)"
    )
    assert proc.returncode == 2 and proc.stderr.strip() == f"ovtui: error: {reason}"
    [run] = list((root / "runs").iterdir())
    report = json.loads((run / "report.json").read_text())
    assert report["failed"] == reason and report["errors"] == [reason]
    finished = json.loads((run / "events.jsonl").read_text().splitlines()[-1])
    assert finished["kind"] == "run_finished" and finished["data"]["failed"] == reason


def test_wait_for_review_holds_the_run_until_the_plan_is_applied_from_another_process(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    args = [
        "train",
        str(root),
        "--epochs",
        "1",
        "--batch-size",
        "30",
        "--approve",
        "ask",
        "--wait-for-review",
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ovtui", *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    try:
        waiting = next(line for line in proc.stdout if "wait for your review; the run waits" in line)
        plan = waiting.split()[1].rstrip(":")
        for action in (["approve", plan], ["apply", plan]):  # a person, in another terminal
            done = _ovtui("review", "-w", str(root), *action, cwd=tmp_path)
            assert done.returncode == 0, done.stderr
        rest = proc.stdout.read()
        assert proc.wait(timeout=240) == 0
    finally:
        proc.kill()
        proc.stdout.close()
    assert f"plan {plan} applied: the run goes on" in rest and "parked without waiting" not in rest
    [run] = list((root / "runs").iterdir())
    report = json.loads((run / "report.json").read_text())
    assert report["pending_plans"] == [] and len(report["history_ids"]) == 1


def test_ask_without_waiting_says_the_parked_plans_may_overlap(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    proc = _ovtui("train", str(root), "--epochs", "1", "--approve", "ask", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "4 plan(s) waiting for review" in proc.stdout
    assert "parked without waiting" in proc.stdout and "--wait-for-review" in proc.stdout


def test_watch_stops_cleanly_on_interrupt(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ovtui", "train", str(root), "--watch", "--approve", "all"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until it says it is watching
        if "watching inbox" in line:
            break
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    [run] = list((root / "runs").iterdir())
    assert json.loads((run / "report.json").read_text())["command"] == "stream"


def test_trials_flag_runs_each_eval_case_n_times_and_reports_pass_k(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    once = _ovtui("eval", str(root), cwd=tmp_path)
    assert once.returncode == 0, once.stderr
    twice = _ovtui("eval", str(root), "--trials", "2", cwd=tmp_path)
    assert twice.returncode == 0, twice.stderr
    assert "eval] 2 trials per case: pass^1=" in twice.stdout and "pass^2=" in twice.stdout
    assert "trials per case" not in once.stdout
    reports = sorted((root / "runs").iterdir())  # run ids sort in the order the runs began
    stages = [json.loads((run / "report.json").read_text())["stages"][-1] for run in reports]
    assert stages[1]["cases"] == 2 * stages[0]["cases"]
    trained = _ovtui("train", str(root), "--epochs", "0", "--trials", "3", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    assert "[baseline_eval] 3 trials per case:" in trained.stdout


def test_trials_flag_refuses_zero_and_too_many(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    zero = _ovtui("eval", str(root), "--trials", "0", cwd=tmp_path)
    assert zero.returncode == 2 and "--trials" in zero.stderr
    many = _ovtui("eval", str(root), "--trials", "33", cwd=tmp_path)
    assert many.returncode == 2 and "trials must be 1 to 32 (got 33)" in many.stderr
    assert "Traceback" not in many.stderr
    runs = root / "runs"
    assert not runs.exists() or not any(runs.iterdir())  # refused before a run (and its report) began


def test_a_dataset_without_a_validation_split_is_refused_in_one_line_saying_how_to_add_one(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ws"
    build_sample_workspace(root)
    (root / "datasets" / "support" / "validation.jsonl").unlink()
    refused = _ovtui("train", str(root), "--epochs", "1", "--approve", "all", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "datasets/support/validation.jsonl: dataset split not found" in refused.stderr
    assert "`[trainer] validation = 0.2`" in refused.stderr and "--unseal" in refused.stderr
    assert not (root / ".ovtui" / "sealed.json").exists()  # the test split was not scored instead
    config = root / "ovtui.toml"
    config.write_text(config.read_text().replace("[trainer]\n", "[trainer]\nvalidation = 0.2\n"))
    held_out = _ovtui("train", str(root), "--epochs", "1", "--approve", "all", cwd=tmp_path)
    assert held_out.returncode == 0, held_out.stderr
    assert "scored on: support/validation" in held_out.stdout
