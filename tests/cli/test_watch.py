"""``ovtui train --watch`` in a real process: it says what it trained on and applied, grades a rollout
that comes without an evaluation when the workspace can, quarantines one it cannot grade, and its
report lists the history records the run wrote."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from workspace_support import build_sample_workspace

from ovtui.app.views.run import RunProgress, describe_event
from ovtui.core.context import ExecutionContext
from ovtui.core.domain import RubricCriterion
from ovtui.core.events import Event
from ovtui.environments.sample.agent import SampleAgentExecutor
from ovtui.environments.sample.generate import generate_cases
from ovtui.wiring.workspace import Workspace

CONFIG = '[review]\npolicy = "all"\n[trainer]\nmax_gradients_per_update = 50\nmax_wait_seconds = 0.3\n'


def _drop_rollouts(root: Path) -> None:
    workspace = Workspace(root)
    cases = generate_cases("train", 3, seed=11)
    rollouts = asyncio.run(
        SampleAgentExecutor().execute(cases, workspace.reading.experiences(), ExecutionContext("inbox"))
    )
    graded, ungraded, foreign = rollouts
    assert graded.evaluation is not None and not graded.evaluation.passed
    ungraded = ungraded.model_copy(update={"evaluation": None})
    unknown = RubricCriterion(name="tone", metadata={"kind": "politeness"})
    case = foreign.case.model_copy(
        update={"rubric": foreign.case.rubric.model_copy(update={"criteria": [unknown]})}
    )
    foreign = foreign.model_copy(update={"evaluation": None, "case": case})
    inbox = root / "inbox" / "rollouts"
    for name, rollout in (("graded", graded), ("ungraded", ungraded), ("foreign", foreign)):
        (inbox / f"{name}.json").write_text(rollout.model_dump_json(), encoding="utf-8")


def test_watch_reports_files_plans_and_records(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    (root / "ovtui.toml").write_text(CONFIG, encoding="utf-8")
    _drop_rollouts(root)
    proc = subprocess.Popen(
        [sys.executable, "-m", "ovtui", "train", "ws", "--watch"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    watchdog = threading.Timer(120, proc.kill)  # a broken watcher fails the test instead of hanging it
    watchdog.start()
    seen: list[str] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line.rstrip("\n"))
            if sum(s.startswith("trained on ") for s in seen) == 2:
                break
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        watchdog.cancel()
    seen += out.splitlines()
    assert proc.returncode == 0, err
    assert seen[0] == "ovtui train · ws · backend offline"
    assert "watching inbox/rollouts/ of ws" in seen[1]
    trained = [s for s in seen if s.startswith("trained on ")]
    assert any(s.startswith("trained on graded.json: ") for s in trained)
    assert any(
        s.startswith("trained on ungraded.json (graded by the workspace's evaluator): ") for s in trained
    )
    applied = [s for s in seen if s.startswith("plan ") and " applied: " in s]
    assert applied and all("record history/" in s for s in applied)

    reason = (root / "inbox" / "rejected" / "foreign.json.reason.txt").read_text()
    assert "no `evaluation`" in reason and "docs/rollouts.md" in reason
    assert "rejected" in err and "foreign.json" in err
    assert (root / "inbox" / "done" / "ungraded.json").exists()

    [run] = list((root / "runs").iterdir())
    report = json.loads((run / "report.json").read_text())
    records = [e.id for e in Workspace(root).reading.history()]
    assert report["history_ids"] and sorted(report["history_ids"]) == sorted(records)
    assert report["inbox"] == {"processed": 2, "rejected": 1}
    assert "inbox: 2 file(s) trained on, 1 rejected" in out
    assert f"report: ws/runs/{run.name}/report.json" in out

    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    started = next(e for e in events if e["kind"] == "run_started")
    assert started["data"]["dataset"] == "inbox/rollouts/"
    progress = [e["data"] for e in events if e["kind"] == "progress" and e["data"]["stage"] == "stream"]
    assert progress[-1]["done"] == progress[-1]["total"] == 3

    # What the app's Stream shows for these events: real counts and state, no "dataset None".
    shown = RunProgress()
    lines = []
    for raw in events:
        event = Event(raw["kind"], raw["data"])
        if event.kind != "run_finished":
            shown.apply(event)
        lines.append(describe_event(event) or "")
    assert "None" not in lines[0] and "inbox/rollouts/" in lines[0]
    assert shown.status_line() == "stream: watching inbox/rollouts/ · 2 file(s) trained on"
    assert shown.stage_rows()[0][3] == "3 inbox file(s): 2 trained on · 0 in training · 1 skipped or rejected"
    assert shown.counts["rollouts"] == 2 and shown.counts["plans"] >= 1
