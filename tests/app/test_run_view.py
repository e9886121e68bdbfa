"""What the Run screen shows, folded from kernel events (no app needed)."""

from __future__ import annotations

import time

from ovtui.app.views.run import RunProgress, describe_event, log_line, wrapped
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
    seen = Event("progress", {"stage": "stream", "done": 1, "total": 1})
    for event in (started, Event("inbox_processed", {"file": "r1.json", "errors": []}), seen):
        progress.apply(event)
    assert describe_event(started) == "stream started: watching inbox/rollouts/ (offline)"
    assert progress.status_line() == "stream: watching inbox/rollouts/ · 1 file(s) trained on"
    assert progress.stage_rows()[0] == (
        "rollouts",
        0,
        None,
        "1 inbox file(s): 1 trained on · 0 in training · 0 skipped or rejected",
    )
    assert "0/0" not in " ".join(text for *_, text in progress.stage_rows())


def test_a_streams_files_in_training_are_counted_apart_from_the_ones_trained_on() -> None:
    """Two rollouts analyzed while one file's batch is still open: the counts agree with each other."""
    progress = RunProgress(command="stream")
    for event in (
        Event("run_started", {"run_id": "r1", "command": "stream"}),
        Event("progress", {"stage": "stream", "done": 1, "total": 2}),
        Event("counts", {"rollouts": 2, "trajectories": 2, "gradients": 2, "plans": 0}),
        Event("inbox_processed", {"file": "a.json", "errors": []}),
    ):
        progress.apply(event)
    rows = {stage: text for stage, _, _, text in progress.stage_rows()}
    assert rows["rollouts"] == "2 inbox file(s): 1 trained on · 1 in training · 0 skipped or rejected"
    assert rows["trajectories"] == "2 trajectories from 2 rollouts"


def test_a_file_taken_before_a_restart_is_not_called_trained_on() -> None:
    event = Event("inbox_processed", {"file": "a.json", "errors": [], "taken_before": True})
    progress = RunProgress(command="stream")
    progress.apply(event)
    assert describe_event(event) == "inbox: a.json was trained on before a restart; not trained again"
    assert progress.inbox_files == 0


def test_a_stopped_stream_says_stopped_and_a_cancelled_run_stays_cancelled() -> None:
    stream = fold(Event("run_started", {"command": "stream", "run_id": "r"}))
    stream.command = "stream"
    stream.apply(Event("run_finished", {"cancelled": False, "report": {}}))
    assert stream.status_line() == "stream: stopped"
    train = fold(Event("run_started", {"command": "train"}))
    train.cancel()  # stopped while it waited for review
    train.apply(Event("run_finished", {"cancelled": False, "report": {}}))
    assert train.status_line() == "train: cancelled"


def test_a_run_waiting_for_review_says_so_until_the_plan_is_settled() -> None:
    progress = fold(
        Event("run_started", {"command": "train", "epochs": 3}),
        Event("progress", {"stage": "train_rollouts", "done": 8, "total": 30, "epoch": 0}),
        Event("plan_pending", {"plan_id": "p1", "items": 5, "waiting": True}),
    )
    assert progress.status_line() == "train: WAITING FOR YOUR REVIEW — plan p1 (5 item(s)): press 2"
    progress.apply(Event("plan_settled", {"plan_id": "p1", "status": "applied"}))
    assert progress.status_line().startswith("train: running — training, epoch 1/3")
    applied = {"plan_id": "p1", "status": "applied", "history_id": "h1"}
    assert describe_event(Event("plan_settled", applied)) == "plan p1 applied: the run goes on"
    # An all-rejected plan writes nothing and no record: the log does not call it applied.
    nothing = {"plan_id": "p1", "status": "applied", "history_id": None}
    assert describe_event(Event("plan_settled", nothing)) == (
        "plan p1 settled, nothing written (no item approved): the run goes on"
    )


def test_a_failure_reason_is_wrapped_whole_never_cut() -> None:
    reason = "12:00:00 run failed: datasets/support/train.jsonl: dataset split not found (after 8 tries)"
    pieces = wrapped(reason, 40)
    assert all(len(piece) <= 40 for piece in pieces) and len(pieces) > 1
    assert " ".join(piece.strip() for piece in pieces) == reason
    assert wrapped("short", 40) == ["short"] and wrapped(reason, 0) == [reason]


def test_an_evaluation_outside_the_epochs_names_no_epoch() -> None:
    def eval_event(epoch: int) -> Event:
        return Event(
            "eval", {"stage": "baseline_eval", "epoch": epoch, "cases": 15, "passed": 3, "accuracy": 0.2}
        )

    assert describe_event(eval_event(-1)) == "[baseline_eval] cases=15 accuracy=20.00% passed=3/15"
    assert describe_event(eval_event(2)) == "[baseline_eval] epoch=2 cases=15 accuracy=20.00% passed=3/15"
