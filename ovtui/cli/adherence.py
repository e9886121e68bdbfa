"""``ovtui adherence``: whether the agent did what each experience it used says.

One line per experience recorded: its class, its uses followed / violated / not applicable, the
pass rate of its cases when followed and when violated with exact 95% intervals, and the directive
broken most often (how many of its violations the model judged, with ``[adherence] model_judge``).
``--json``: one object per experience (``experience``, ``uses``, ``followed``,
``violated``, ``not_applicable``, ``pass_rate_followed``, ``pass_rate_violated``, ``class`` and
its directives with the trajectories that broke them).
"""

from __future__ import annotations

import argparse
import json

from ovtui.cli.common import add_workspace_arguments, open_workspace


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    adherence = sub.add_parser(
        "adherence", help="whether each experience was followed, ignored, or followed into failure"
    )
    add_workspace_arguments(adherence)
    adherence.add_argument("--json", action="store_true", help="print one JSON object per experience")
    adherence.add_argument(
        "--propose",
        action="store_true",
        help="park a plan for review: ignored experiences made followable, misleading ones revised",
    )
    adherence.set_defaults(handler=run_adherence)


def run_adherence(args: argparse.Namespace) -> int:
    workspace = open_workspace(args.workspace, reading=not args.propose)
    found = workspace.reading.adherence()
    if args.propose:
        plan_id = workspace.measures.propose_adherence()
        print(f"parked plan {plan_id} for review (`ovtui review`)" if plan_id else "nothing to propose")
        return 0
    if args.json:
        print(json.dumps([a.to_json() for a in found], ensure_ascii=False, indent=2))
        return 0
    if not found:
        print("no adherence recorded yet: a train run or a committed session that uses one records it")
        return 0
    for entry in found:
        print(f"{entry.record.name}: {entry.line()}")
        broken = entry.most_ignored
        if broken is not None:
            judged = broken.judged.get("violated", 0)  # the model's word, not the offline check's
            by_model = f", {judged} by the model" if judged else ""
            print(
                f"  most broken: {broken.line} "
                f"({broken.violated} of {broken.violated + broken.followed}{by_model})"
            )
    return 0
