"""``ovtui check [WORKSPACE]``: exit 0 with a summary, or 1 listing ``path:line: message`` per problem."""

from __future__ import annotations

import argparse

from ovtui.cli_commands import open_store
from ovtui.workspace.check import check_workspace


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("check", help="validate every memory file, dataset line and the config")
    parser.add_argument("workspace", nargs="?", default=".", help="the workspace (default: current folder)")
    parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    report = check_workspace(open_store(args.workspace, strict_config=False))
    for note in report.notes:
        print(f"note: {note}")
    for problem in report.problems:
        print(problem)
    if not report.ok:
        print(f"{len(report.problems)} problem(s); checked {report.summary()}")
        return 1
    print(f"ok: {report.summary()}")
    return 0
