"""``ovtui utility``: each experience's leave-one-out ablation and the tokens it costs, on request.

What it will run is said first (experiences, cases, agent runs, what counts the tokens, and a cost
bound when the model is priced) and asked for unless ``--yes``; each experience measured is one
line on stderr as it comes; Ctrl-C stops between batches and leaves what was measured saved.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ovtui.cli.common import open_workspace, run_closing, where, whole_number

if TYPE_CHECKING:
    from ovtui.core.events import Event
    from ovtui.llm.tokens import TokenCounter
    from ovtui.train.utility import UtilityOutcome, UtilityPlan
    from ovtui.wiring.workspace import Workspace


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    utility = sub.add_parser(
        "utility", help="measure each experience: the policy with and without it, paired, and its tokens"
    )
    utility.add_argument("-w", "--workspace", default=".", type=Path)
    utility.add_argument("--dataset", help="datasets/<NAME>/ (default: [trainer] dataset)")
    utility.add_argument("--split", default="train", help="where its cases come from (default: train)")
    utility.add_argument("--top", type=whole_number(1), metavar="N", help="the N most used experiences")
    utility.add_argument(
        "--experience", nargs="+", default=[], metavar="NAME", help="these experiences (by name) only"
    )
    utility.add_argument(
        "--trials", type=whole_number(1), help="runs of each case (default: [trainer] eval_trials)"
    )
    utility.add_argument("--yes", action="store_true", help="start without asking")
    utility.add_argument("--json", action="store_true", help="print one JSON object")
    utility.set_defaults(handler=run_utility)


def _cost_line(workspace: Workspace, plan: UtilityPlan, tokens: TokenCounter) -> str | None:
    """A bound on the prompt cost when the model is priced: every experience in every prompt."""
    from ovtui.train.utility import prompt_block

    price = workspace.config.llm.prompt_price_per_mtok
    if price <= 0:
        return None
    policy = sum(tokens(prompt_block(e)) for e in plan.policy.policies)
    cases = max((tokens(json.dumps(c.input, ensure_ascii=False)) for c in plan.cases), default=0)
    bound = plan.calls * (policy + cases) * price / 1_000_000
    amount = f"about ${bound:.4f}" if tokens.exact else f"≈${bound:.4f}"
    return f"cost: at most {amount} in prompt tokens if every run is a model call (completions not counted)"


def _confirmed(stream_out: bool) -> bool:
    print("start? [y/N] ", end="", flush=True, file=sys.stderr if stream_out else sys.stdout)
    answer = sys.stdin.readline()
    return answer.strip().lower() in {"y", "yes"}


class MeasuredLine:
    """One line on stderr per experience measured, whatever the terminal."""

    def __call__(self, event: Event) -> None:
        from ovtui.train.utility import STAGE_MEASURED

        if event.kind == "progress" and event.data.get("stage") == STAGE_MEASURED:
            data = event.data
            line = f"[{data['done']}/{data['total']}] {data['name']}: {data['line']}"
            print(line, file=sys.stderr, flush=True)


def _as_json(workspace: Workspace, plan: UtilityPlan, outcome: UtilityOutcome, tokens: TokenCounter) -> str:
    from ovtui.train.utility import CORRECTION, UTILITY_FILE

    return json.dumps(
        {
            "run_id": outcome.run_id,
            "dataset": plan.dataset,
            "split": plan.split,
            "trials": plan.trials,
            "policy": plan.policy_id,
            "estimated_calls": plan.calls,
            "tokenizer": tokens.tokenizer,
            "tokens_estimated": not tokens.exact,
            "calls": sum(e.calls for e in outcome.measured)
            + 3 * plan.trials * len(plan.cases)
            + outcome.checked_calls,
            "correction": CORRECTION,
            "checked_together": outcome.checked,
            "kept": outcome.kept,
            "experiences": [e.model_dump(mode="json") for e in outcome.measured],
            "unmeasured": plan.unmeasured,
            "cancelled": outcome.cancelled,
            "plan_id": outcome.plan_id,
            "results": where(workspace.root / UTILITY_FILE),
            "report": where(workspace.reading.report_path(outcome.run_id)),
        },
        ensure_ascii=False,
    )


def run_utility(args: argparse.Namespace) -> int:
    from ovtui.cli.train import ProgressLine, cancellable
    from ovtui.train.utility import CORRECTION, UTILITY_FILE
    from ovtui.wiring.services.measures import UtilityOptions

    workspace = open_workspace(args.workspace)
    options = UtilityOptions(
        dataset=args.dataset, split=args.split, experiences=args.experience, top=args.top, trials=args.trials
    )
    plan = run_closing(workspace, workspace.measures.utility_plan(options))
    said = sys.stderr if args.json else sys.stdout
    tokens = run_closing(workspace, workspace.parts.token_counter())
    for line in [*plan.lines(), tokens.said()]:
        print(line, file=said)
    cost = _cost_line(workspace, plan, tokens)
    if cost:
        print(cost, file=said)
    if not plan.ablations:
        print("nothing to measure", file=said)
        return 0
    if not args.yes and not _confirmed(args.json):
        print("not started", file=said)
        return 1
    progress = ProgressLine()
    outcome = run_closing(
        workspace,
        cancellable(
            lambda cancel: workspace.measures.utility(plan, [progress, MeasuredLine()], cancel, tokens=tokens)
        ),
    )
    progress.clear()
    if args.json:
        print(_as_json(workspace, plan, outcome, tokens))
    else:
        for entry in outcome.measured:
            print(f"{entry.name}: {entry.line()}")
        if outcome.measured:
            print(f"p-values corrected for {len(outcome.measured)} test(s) at once ({CORRECTION})")
        for line in [outcome.checked, *outcome.kept]:
            if line:
                print(line)
        if outcome.plan_id:
            print(f"proposed for review: plan {outcome.plan_id} (`ovtui review show {outcome.plan_id}`)")
    saved = where(workspace.root / UTILITY_FILE)
    if outcome.cancelled:
        print(
            f"stopped: {len(outcome.measured)} of {len(plan.ablations)} measured, saved in {saved}", file=said
        )
        return 130
    print(f"results: {saved}", file=said)
    return 0
