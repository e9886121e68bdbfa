"""``ovtui revalidate``: what drifted since the experiences were learned (the environment's policy
text or tool schemas, the model, the agent), their linked cases rerun with the setup of now, and
the experiences whose cases now fail queued in Review as stale items."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ovtui.cli.common import open_workspace, run_closing
from ovtui.core.errors import OvtuiError


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "revalidate",
        help="rerun the linked cases of experiences whose setup drifted; queue those that now fail",
    )
    parser.add_argument("-w", "--workspace", default=".", type=Path)
    parser.add_argument("--dataset", help="datasets/<NAME>/ (default: [trainer] dataset)")
    parser.add_argument(
        "--split", default="train", help="where the linked cases are looked up (default: train)"
    )
    parser.add_argument("--yes", action="store_true", help="run without asking (the estimate is still said)")
    parser.add_argument("--force", action="store_true", help="rerun every experience's cases, drifted or not")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(handler=run_revalidate)


def _confirmed(calls: int) -> bool:
    """A person says yes at a terminal; without one, ``--yes`` is the only yes."""
    if not sys.stdin.isatty():
        raise OvtuiError(f"revalidate would make {calls} agent call(s): pass --yes to run without a terminal")
    answer = input(f"run {calls} agent call(s)? [y/N] ")
    return answer.strip().lower() in ("y", "yes")


def run_revalidate(args: argparse.Namespace) -> int:
    from ovtui.cli.train import ProgressLine, cancellable
    from ovtui.train.revalidation import Revalidation

    workspace = open_workspace(args.workspace)
    check = run_closing(workspace, workspace.measures.drift_check(args.dataset, args.split, force=args.force))
    said = sys.stderr if args.json else sys.stdout  # --json keeps stdout to its one object
    if check.cases and not args.yes:
        for line in check.lines():
            print(line, file=said)
        if not _confirmed(check.agent_calls):
            print("nothing run", file=said)
            return 1
    progress = ProgressLine()
    result: Revalidation = run_closing(
        workspace, cancellable(lambda cancel: workspace.measures.revalidate(check, [progress], cancel))
    )
    progress.clear()
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        for line in result.lines():
            print(line)
    return 0
