"""What the Run screen shows, folded from kernel events (no app needed)."""

from __future__ import annotations

import time

from ovtui.app.views.run import RunProgress, describe_event, log_line
from ovtui.core.events import Event


def fold(*events: Event) -> RunProgress:
    progress = RunProgress(command="train", batch_size=10)
    for event in events:
        progress.apply(event)
    return progress


def test_each_bar_keeps_one_denominator_for_the_run_and_says_which() -> None:
    started = Event("run_started", {"command": "train", "epochs": 2})
    baseline = fold(started, Event("progress", {"stage": "baseline_eval", "done": 5, "total": 15}))
    assert baseline.stage_rows()[0][1:] == (5, 15, "5/15 baseline eval")
    training = fold(
        started,
        Event("progress", {"stage": "train_rollouts", "done": 16, "total": 30, "epoch": 1}),
        Event("counts", {"rollouts": 46, "trajectories": 40, "gradients": 11, "plans": 5}),
    )
    rows = {stage: (done, total, text) for stage, done, total, text in training.stage_rows()}
    assert rows["rollouts"] == (16, 30, "16/30 training, epoch 2/2")
    assert rows["trajectories"] == (46, 60, "40 trajectories · 46/60 of run")
    assert rows["gradients"][1] == 60 and rows["plans"] == (5, 6, "5/6 batch plans of run")


def test_a_failed_run_says_failed_even_if_a_finished_event_follows() -> None:
    progress = fold(Event("run_started", {"command": "train"}))
    progress.fail("DatasetError: no dataset 'x'")
    progress.apply(Event("run_finished", {"cancelled": False, "report": {}}))
    assert progress.status_line() == "train: FAILED — DatasetError: no dataset 'x'"


def test_log_lines_are_stamped_with_the_event_time_not_the_clock() -> None:
    at = time.mktime((2026, 11, 29, 8, 30, 5, 0, 0, -1))
    line = log_line(Event("log", {"message": "hello"}, at))
    assert line == "08:30:05 hello"
    assert log_line(Event("progress", {"stage": "x"}, at)) is None


def test_an_applied_plan_says_how_many_items_were_refused_and_why() -> None:
    event = Event(
        "plan_applied",
        {
            "plan_id": "p1",
            "written": 1,
            "deleted": 0,
            "dry_run": False,
            "errors": ["a.md: stale", "b.md: stale"],
        },
    )
    assert (
        describe_event(event) == "plan p1 applied: 1 written, 0 deleted; 2 refused: a.md: stale; b.md: stale"
    )


def test_a_stream_says_what_it_watches_and_counts_files_not_fractions() -> None:
    started = Event("run_started", {"run_id": "r1", "command": "stream", "backend": "offline"})
    progress = RunProgress(command="stream")
    for event in (started, Event("inbox_processed", {"file": "r1.json", "errors": []})):
        progress.apply(event)
    assert describe_event(started) == "stream started: watching inbox/rollouts/ (offline)"
    assert progress.status_line() == "stream: watching inbox/rollouts/ · 1 file(s) trained on"
    assert progress.stage_rows()[0] == ("rollouts", 0, None, "1 inbox file(s) trained on")
    assert "0/0" not in " ".join(text for *_, text in progress.stage_rows())
