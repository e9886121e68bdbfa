"""``ovtui train`` and ``ovtui eval``: the kernel headless, with a progress line on a TTY."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

from ovtui.cli.common import add_workspace_arguments, open_workspace, run_closing, where, whole_number
from ovtui.core.splits import VALIDATION_SPLIT

if TYPE_CHECKING:
    import asyncio

    from ovtui.core.events import Event, Listener
    from ovtui.train.reports import RunReport
    from ovtui.wiring.workspace import Workspace

T = TypeVar("T")
UNSEAL_HELP = (
    "score the split even though [evaluation] sealed names it (by default: test); each scoring is counted"
)
SPLIT_HELP = "the split to score (default: validation; a sealed split, e.g. test, needs --unseal)"
TRIALS_HELP = "runs of each eval case; above 1 the report gives pass^k (default: [trainer] eval_trials)"


class ProgressLine:
    """One self-overwriting status line on stderr; silent when stderr is not a terminal."""

    def __init__(self, stream: TextIO = sys.stderr) -> None:
        self.stream = stream
        self.enabled = stream.isatty()
        self.counts: dict[str, int] = {}
        self.stage = ""

    def __call__(self, event: Event) -> None:
        if event.kind == "log" and event.data.get("level") in {"error", "warning"}:
            self.clear()
            print(f"{event.data['level']}: {event.data['message']}", file=self.stream)
        if not self.enabled:
            return
        if event.kind == "progress":
            done, total = int(event.data["done"]), max(1, int(event.data["total"]))
            filled = int(24 * done / total)
            self.stage = f"{event.data['stage']:<15} [{'#' * filled}{'.' * (24 - filled)}] {done}/{total}"
        elif event.kind == "counts":
            self.counts = {k: int(v) for k, v in event.data.items()}
        elif event.kind == "eval":
            self.clear()
            return
        counts = " ".join(f"{k}={v}" for k, v in self.counts.items())
        self.stream.write(f"\r\x1b[2K{self.stage}  {counts}")
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


class WatchLog:
    """``train --watch`` says what it does: each file trained on, each plan applied or parked."""

    def __init__(self, progress: ProgressLine, stream: TextIO = sys.stdout) -> None:
        self.progress = progress
        self.stream = stream

    def __call__(self, event: Event) -> None:
        line = self.describe(event)
        if line is not None:
            self.progress.clear()
            print(line, file=self.stream, flush=True)

    @staticmethod
    def describe(event: Event) -> str | None:
        data = event.data
        if event.kind == "inbox_processed":
            from ovtui.train.reports import describe_inbox_processed

            return describe_inbox_processed(data)
        if event.kind == "plan_applied":
            from ovtui.train.reports import describe_plan_applied

            return describe_plan_applied(data)
        if event.kind == "plan_pending":
            plan_id = data.get("plan_id")
            return (
                f"plan {plan_id}: {data.get('items')} item(s) wait for review (`ovtui review show {plan_id}`)"
            )
        return None


class ReviewWaits:
    """``train --wait-for-review`` says when the run waits for a person, and how to answer it."""

    def __init__(self, progress: ProgressLine, workspace: str, stream: TextIO = sys.stdout) -> None:
        self.progress = progress
        self.workspace = workspace
        self.stream = stream

    def __call__(self, event: Event) -> None:
        data = event.data
        if event.kind == "plan_pending" and data.get("waiting"):
            plan = data.get("plan_id")
            line = (
                f"plan {plan}: {data.get('items')} item(s) wait for your review; the run waits. Review it "
                f"in another terminal (`ovtui review show {plan} -w {self.workspace}`, then approve and "
                "apply, or discard) or in the app"
            )
        elif event.kind == "plan_settled":
            line = f"plan {data.get('plan_id')} {data.get('status')}: the run goes on"
        else:
            return
        self.progress.clear()
        print(line, file=self.stream, flush=True)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    train = sub.add_parser(
        "train", help="train the policy on a dataset (or stream from the inbox with --watch)"
    )
    add_workspace_arguments(train)
    train.add_argument("--dataset", help="datasets/<NAME>/ (default: [trainer] dataset)")
    train.add_argument(
        "--epochs",
        type=whole_number(0),
        help="epochs over the train split; 0 only evaluates (default: [trainer] epochs)",
    )
    train.add_argument(
        "--batch-size", type=whole_number(1), help="cases per batch (default: [trainer] batch_size)"
    )
    train.add_argument("--limit", type=whole_number(0), help="use only the first N train cases")
    train.add_argument(
        "--approve",
        metavar="POLICY",
        help="all | none | ask | gate | confidence>=X (default: [review] policy)",
    )
    train.add_argument(
        "--dry-run", action="store_true", default=None, help="write no memory file, only the records"
    )
    train.add_argument(
        "--wait-for-review",
        action="store_true",
        help="a plan parked for review holds the run until it is applied or discarded (`ovtui review`, "
        "another terminal, or the app), as the app's runs do; without it the run parks it and goes on",
    )
    train.add_argument("--no-eval", action="store_true", help="skip the baseline and final evaluation")
    train.add_argument("--eval-split", default=VALIDATION_SPLIT, metavar="SPLIT", help=SPLIT_HELP)
    train.add_argument("--trials", type=whole_number(1), help=TRIALS_HELP)
    train.add_argument("--unseal", action="store_true", help=UNSEAL_HELP)
    train.add_argument(
        "--watch", action="store_true", help="stream rollouts from inbox/rollouts/ until interrupted"
    )
    train.set_defaults(handler=run_train)

    evaluate = sub.add_parser(
        "eval", help="accuracy of the current policy on a split (writes only the report)"
    )
    add_workspace_arguments(evaluate)
    evaluate.add_argument("--dataset", help="datasets/<NAME>/ (default: [trainer] dataset)")
    evaluate.add_argument("--split", default=VALIDATION_SPLIT, help=SPLIT_HELP)
    evaluate.add_argument("--trials", type=whole_number(1), help=TRIALS_HELP)
    evaluate.add_argument("--unseal", action="store_true", help=UNSEAL_HELP)
    evaluate.set_defaults(handler=run_eval)


def _finish(report: RunReport, workspace: Workspace) -> int:
    print(report.summary())
    print(f"report: {where(workspace.reading.report_path(report.run_id))}")
    if report.cancelled:
        print("run cancelled; everything applied so far is consistent and recorded", file=sys.stderr)
        return 130
    return 1 if report.errors and not report.stages else 0


def workspace_label(root: Path) -> str:
    """The workspace by name: as reachable from here, or its full path when it is the current folder."""
    shown = where(root)
    return str(root.resolve()) if shown == "." else shown


def run_train(args: argparse.Namespace) -> int:
    from ovtui.wiring.workspace import TrainOptions

    workspace = open_workspace(args.workspace)
    progress = ProgressLine()
    print(f"ovtui train · {workspace_label(workspace.root)} · backend {workspace.backend_label}")
    if args.watch:
        return run_closing(workspace, _watch(workspace, args, progress))
    options = TrainOptions(
        dataset=args.dataset,
        epochs=args.epochs,
        batch_size=args.batch_size,
        approve=args.approve,
        dry_run=args.dry_run,
        eval_split=None if args.no_eval else args.eval_split,
        limit=args.limit,
        trials=args.trials,
        unseal=args.unseal,
    )
    listeners: list[Listener] = [progress, ReviewWaits(progress, workspace_label(workspace.root))]
    report = run_closing(
        workspace,
        cancellable(
            lambda cancel: workspace.runs.train(
                options, listeners, cancel, wait_for_review=args.wait_for_review
            )
        ),
    )
    progress.clear()
    if report.pending_plans and not args.wait_for_review:
        print(
            "parked without waiting: each later batch was planned without these plans, so they may "
            "overlap; --wait-for-review waits for each, as the app does"
        )
    return _finish(report, workspace)


async def cancellable(start: Callable[[asyncio.Event], Awaitable[T]], announce: str = "") -> T:
    """Ctrl-C asks the run to stop between batches instead of killing it mid-apply."""
    import asyncio  # in here, as the kernel is: building the parser stays quick
    import signal

    cancel = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, cancel.set)
    if announce:
        print(announce, flush=True)
    try:
        return await start(cancel)
    finally:
        loop.remove_signal_handler(signal.SIGINT)


async def _watch(workspace: Workspace, args: argparse.Namespace, progress: ProgressLine) -> int:
    listeners: list[Listener] = [progress, WatchLog(progress)]
    report = await cancellable(
        lambda stop: workspace.runs.stream(listeners, stop, approve=args.approve, dry_run=args.dry_run),
        announce=f"watching inbox/rollouts/ of {workspace_label(workspace.root)} — Ctrl-C to stop",
    )
    progress.clear()
    print(report.summary())
    print(f"report: {where(workspace.reading.report_path(report.run_id))}")
    return 0


def run_eval(args: argparse.Namespace) -> int:
    workspace = open_workspace(args.workspace)
    progress = ProgressLine()
    report = run_closing(
        workspace,
        cancellable(
            lambda cancel: workspace.runs.evaluate(
                args.dataset, args.split, [progress], cancel, trials=args.trials, unseal=args.unseal
            )
        ),
    )
    progress.clear()
    return _finish(report, workspace)
