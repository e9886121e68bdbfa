"""``ovtui compare A B`` (two policies, paired, with an A/A null) and ``ovtui report [RUN] --html``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ovtui.cli.common import open_workspace, run_closing, where, whole_number
from ovtui.cli.train import SPLIT_HELP, UNSEAL_HELP
from ovtui.core.errors import OvtuiError
from ovtui.core.splits import VALIDATION_SPLIT

if TYPE_CHECKING:
    from ovtui.train.reports import RunReport
    from ovtui.wiring.workspace import Workspace

POLICY_HELP = "`current`, a history record id (the policy right after it) or a folder of experience files"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    compare = sub.add_parser(
        "compare", help="run two policies on the same cases, paired, with an A/A null beside them"
    )
    compare.add_argument("a", metavar="A", help=POLICY_HELP)
    compare.add_argument("b", metavar="B", help=POLICY_HELP)
    compare.add_argument("-w", "--workspace", default=".", type=Path)
    compare.add_argument("--dataset", help="datasets/<NAME>/ (default: [trainer] dataset)")
    compare.add_argument("--split", default=VALIDATION_SPLIT, help=SPLIT_HELP)
    compare.add_argument(
        "--trials", type=whole_number(1), help="runs of each case (default: [trainer] eval_trials)"
    )
    compare.add_argument("--unseal", action="store_true", help=UNSEAL_HELP)
    compare.add_argument("--json", action="store_true", help="print one JSON object")
    compare.add_argument("--html", type=Path, metavar="FILE", help="also write the report as one HTML file")
    compare.set_defaults(handler=run_compare)

    report = sub.add_parser(
        "report", help="a run's report: its summary, or (--html) one self-contained HTML file"
    )
    report.add_argument(
        "run", nargs="?", metavar="RUN", help="a run id or part of one (default: the latest run)"
    )
    report.add_argument("-w", "--workspace", default=".", type=Path)
    report.add_argument(
        "--html", type=Path, metavar="FILE", help="write it as one HTML file (default: print its summary)"
    )
    report.set_defaults(handler=run_report)


def _write_html(workspace: Workspace, report: RunReport, path: Path) -> str:
    """Written whole or not at all (a full disk leaves no half page); a failure is the CLI's one
    line naming the file."""
    from ovtui.storage.fsio import atomic_write_text

    target = path.resolve()
    if not target.parent.is_dir():  # else the write rule's reason for it reads as a link to /
        raise OvtuiError(f"{path}: the folder {path.parent} does not exist (make it first)")
    atomic_write_text(target, workspace.reading.html_report(report), root=target.parent)
    return where(path)


def run_compare(args: argparse.Namespace) -> int:
    from ovtui.cli.train import ProgressLine, cancellable
    from ovtui.wiring.services.measures import CompareOptions

    workspace = open_workspace(args.workspace)
    options = CompareOptions(
        a=args.a, b=args.b, dataset=args.dataset, split=args.split, trials=args.trials, unseal=args.unseal
    )
    progress = ProgressLine()
    compared = cancellable(lambda cancel: workspace.measures.compare(options, [progress], cancel))
    report = run_closing(workspace, compared)
    progress.clear()
    if report.comparison is None:  # cancelled before the three runs were done
        print(report.summary())
        return 130 if report.cancelled else 1
    html = _write_html(workspace, report, args.html) if args.html else None
    if args.json:
        data = report.comparison.to_json(report.run_id)
        data["report"] = where(workspace.reading.report_path(report.run_id))
        data["html"] = html
        data["sealed"] = report.sealed
        first, second, again = (s.results for s in report.stages)
        data["per_case"] = {
            c: {"a": first[c], "b": second[c], "a_again": again.get(c, [])} for c in sorted(first)
        }
        print(json.dumps(data, ensure_ascii=False))
        return 0
    print(report.summary())
    print(f"report: {where(workspace.reading.report_path(report.run_id))}")
    if html:
        print(f"html: {html}")
    return 0


def run_report(args: argparse.Namespace) -> int:
    workspace = open_workspace(args.workspace)
    report = workspace.reading.run_report(args.run)
    if args.html is None:
        print(f"{report.command} {report.run_id} · dataset {report.dataset} · {report.backend}")
        print(report.summary())
        print(f"report: {where(workspace.reading.report_path(report.run_id))}")
        return 0
    print(f"html: {_write_html(workspace, report, args.html)} (run {report.run_id})", file=sys.stdout)
    return 0
