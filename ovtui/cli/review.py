"""``ovtui review``: decide the plans ``train --approve ask`` parked, without the app.

``list`` / ``show`` / ``approve`` / ``reject`` / ``apply`` / ``discard`` / ``replan``, in the
workspace folder or with ``--workspace W``. Every action is the same use case of the ``Workspace``
as the app's Review screen calls (``decide_items``, ``apply_pending``, ``discard_pending``,
``replan``), so files and history records are the same whichever one a person uses.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ovtui.cli.common import (
    WORKSPACE_HELP,
    add_workspace_arguments,
    open_workspace,
    run_closing,
    where,
    whole_number,
)
from ovtui.core.errors import OvtuiError

if TYPE_CHECKING:
    from ovtui.core.domain import PolicyPlanItem
    from ovtui.train.review.plans import Decision, PendingPlan
    from ovtui.wiring.workspace import Workspace

COLOURS = {"+": "\x1b[32m", "-": "\x1b[31m", "@": "\x1b[36m", "F": "\x1b[1m"}
RESET = "\x1b[0m"


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    review = sub.add_parser(
        "review",
        help="decide pending plans without the app (list, show, approve, reject, apply, discard, replan)",
    )
    add_workspace_arguments(review, positional=False)  # a positional here would read as an ACTION
    review.set_defaults(handler=run_list, json=False)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(  # after the action too; the default leaves one given before it in place
        "--workspace",
        "-w",
        dest="workspace_option",
        metavar="WORKSPACE",
        default=argparse.SUPPRESS,
        help=WORKSPACE_HELP,
    )
    actions = review.add_subparsers(dest="action", metavar="ACTION")

    listing = actions.add_parser("list", parents=[common], help="plans waiting for review (the default)")
    listing.add_argument("workspace", nargs="?", default=None, metavar="WORKSPACE", help=WORKSPACE_HELP)
    listing.add_argument("--json", action="store_true", help="a JSON array, one object per plan")
    listing.set_defaults(handler=run_list)

    show = actions.add_parser("show", parents=[common], help="a plan's items, or one item's field diff")
    show.add_argument("plan", help="a plan id (or a unique part of one)")
    show.add_argument("item", nargs="?", type=whole_number(0), help="an item number")
    show.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    show.set_defaults(handler=run_show)

    for name, verb in (("approve", "approved"), ("reject", "rejected")):
        decide = actions.add_parser(
            name, parents=[common], help=f"{name} items (no item numbers: every undecided item)"
        )
        decide.add_argument("plan")
        decide.add_argument("items", nargs="*", type=whole_number(0), metavar="ITEM")
        decide.add_argument("--note", default="", help="a note kept with the decision in the record")
        decide.add_argument(
            "--reviewer", default=None, help="who decides (default: [review] reviewer, else the OS login)"
        )
        if name == "approve":
            decide.add_argument(
                "--hunks",
                type=hunk_numbers,
                default=None,
                metavar="N,M",
                help="approve only these hunks of the item's content (`review show PLAN ITEM` numbers them)",
            )
            decide.add_argument(
                "--key",
                type=Path,
                default=None,
                metavar="PATH",
                help="the SSH key to sign the approval with (default: [review] key, else ssh-agent)",
            )
        decide.set_defaults(handler=run_decide, decision=verb)

    verify = actions.add_parser(
        "verify",
        parents=[common],
        help="check again the signed approvals the history records keep, against [review] signers",
    )
    verify.add_argument("record", nargs="?", help="one record (an id or a unique part of one); default: all")
    verify.set_defaults(handler=run_verify)

    apply = actions.add_parser("apply", parents=[common], help="apply the approved items of a plan")
    apply.add_argument("plan")
    apply.add_argument("--dry-run", action="store_true", help="check and record only, write no memory")
    apply.set_defaults(handler=run_apply)

    discard = actions.add_parser("discard", parents=[common], help="drop a plan without writing anything")
    discard.add_argument("plan")
    discard.set_defaults(handler=run_discard)

    replan = actions.add_parser(
        "replan",
        parents=[common],
        help="re-estimate and re-plan a plan's evidence against the current policy",
    )
    replan.add_argument("plan", nargs="?")
    replan.add_argument(
        "--all-stale", action="store_true", help="every plan with a stale item, as one fresh plan"
    )
    replan.set_defaults(handler=run_replan)


def hunk_numbers(text: str) -> list[int]:
    """``1,3`` → [1, 3]: hunk numbers as ``review show`` prints them (from 1)."""
    try:
        numbers = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give hunk numbers like 1,3") from None
    if not numbers or min(numbers) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: hunks are numbered from 1, like 1,3")
    return numbers


def _open(args: argparse.Namespace, *, reading: bool = False) -> Workspace:
    return open_workspace(args.workspace, reading=reading)


def _waiting(workspace: Workspace) -> list[PendingPlan]:
    """Waiting plans with their stale marks brought up to date against the files as they are (on a
    disk that takes no writes, full or read-only, as they were last marked, and said so)."""
    try:
        workspace.review.refresh_stale()
    except OSError as exc:
        from ovtui.storage.faults import os_error_line

        print(
            f"ovtui: note: stale marks not brought up to date: {os_error_line(exc, where)}", file=sys.stderr
        )
    plans = workspace.review.pending_plans()
    for name in workspace.review.unreadable_plans():  # left on disk as they are; check says what is wrong
        print(
            f"ovtui: warning: {name} is not a plan ovtui can read, left out: `ovtui check` says why",
            file=sys.stderr,
        )
    return plans


def run_list(args: argparse.Namespace) -> int:
    plans = _waiting(_open(args, reading=True))
    if args.json:
        print(json.dumps([p.summary() for p in plans], indent=2))
        return 0
    if not plans:
        print("no plans waiting for review")
        return 0
    print(f"{'PLAN':<20} {'ITEMS':>5} {'UNDECIDED':>9} {'APPROVED':>8} {'REJECTED':>8} {'STALE':>5}  CREATED")
    for plan in plans:
        row = plan.summary()
        print(
            f"{row['plan_id']:<20} {row['items']:>5} {row['undecided']:>9} {row['approved']:>8} "
            f"{row['rejected']:>8} {row['stale']:>5}  {row['created_at']}"
        )
    stale = sum(1 for p in plans if p.stale)
    if stale:
        print(f"{stale} plan(s) have stale items: `ovtui review replan --all-stale` re-plans them as one")
    return 0


def _item_line(workspace: Workspace, plan: PendingPlan, index: int, item: PolicyPlanItem) -> str:
    from ovtui.train.review.policy import change_kind
    from ovtui.train.review.rejections import PREVIOUSLY_REJECTED

    decision = plan.decisions[index].decision
    confidence = f"{item.confidence:.2f}" if item.confidence is not None else "-"
    stale = "  STALE" if index in plan.stale else ""
    peer = f" (peer {item.peer_id})" if item.peer_id else ""
    target = f"{item.memory_type}/{item.target_name}{peer}"
    approvals = workspace.review.approvals_line(plan, index)
    approvals = f"  [{approvals}]" if approvals else ""
    rejected = "  PREVIOUSLY REJECTED" if item.metadata.get(PREVIOUSLY_REJECTED) else ""
    line = f"{index:>3}  {decision:<9} {change_kind(item):<7} {confidence:>5}  {target}{stale}{approvals}"
    return line + rejected


def field_diff(item: PolicyPlanItem, current_status: str | None) -> Iterator[str]:
    """The item as a unified diff per changed field (name, content, status)."""
    deleted = item.kind == "delete"
    name = item.target_name
    before = {} if item.before_content is None else {"name": name, "content": item.before_content}
    after = {} if deleted else {"name": name, "content": item.after_content or ""}
    if current_status is not None and item.before_content is not None:
        before["status"] = current_status
    new_status = item.metadata.get("status") or (current_status if not deleted else None)
    if new_status is not None and not deleted:
        after["status"] = str(new_status)
    for key in ("name", "content", "status"):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        yield f"Field Diff: {key}"
        yield from difflib.unified_diff(
            (old or "").splitlines(),
            (new or "").splitlines(),
            fromfile=f"before/{key}" if old is not None else "/dev/null",
            tofile=f"after/{key}" if new is not None else "/dev/null",
            lineterm="",
        )


def _colour(lines: Iterator[str], enabled: bool) -> Iterator[str]:
    for line in lines:
        code = COLOURS.get(line[:1]) if enabled and not line.startswith(("+++", "---")) else None
        yield f"{code}{line}{RESET}" if code else line


def _colour_wanted(choice: str) -> bool:
    if choice != "auto":
        return choice == "always"
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def run_show(args: argparse.Namespace) -> int:
    from ovtui.train.review.rejections import marked_line

    workspace = _open(args, reading=True)
    _waiting(workspace)
    plan = workspace.review.pending_plan(workspace.review.resolve_plan(args.plan))
    print(f"plan      {plan.plan_id}")
    print(f"created   {plan.created_at}" + (f" (run {plan.run_id})" if plan.run_id else ""))
    print(f"items     {len(plan.plan.items)}, {plan.undecided} undecided, {len(plan.stale)} stale")
    if args.item is None:
        print()
        print("  #  decision  kind     conf  memory")
        for index, item in enumerate(plan.plan.items):
            print(_item_line(workspace, plan, index, item))
        for line in plan.plan.metadata.get("held_back", []):
            print(f"held back {line}")
        print(f"\n`ovtui review show {plan.plan_id} N` shows item N's diff")
        return 0
    if args.item >= len(plan.plan.items):
        raise OvtuiError(
            f"plan {plan.plan_id} has no item {args.item} (its items are 0–{len(plan.plan.items) - 1})"
        )
    item = plan.plan.items[args.item]
    decision = plan.decisions[args.item]
    # A new memory planned by name (a session's) names its file only here; an event's name carries
    # the time of the apply, so it has none yet; nor has a target that cannot be a file (applying
    # reports it for the item).
    planned = workspace.review.planned_uri(item)
    try:
        current = workspace.reading.memory(planned) if planned else None
    except OvtuiError:
        current = None
    by = f" (by {decision.reviewer})" if decision.reviewer else ""
    print(
        f"item      {args.item}: {decision.decision}" + (f" — {decision.note}" if decision.note else "") + by
    )
    approvals = workspace.review.approvals_line(plan, args.item)
    if approvals:
        print(f"approvals {approvals}")
    peer = f" (peer {item.peer_id})" if item.peer_id else ""
    print(f"target    {item.memory_type}: {planned or item.target_name}{peer}")
    if item.confidence is not None:
        print(f"confidence {item.confidence:.2f}")
    if args.item in plan.stale:
        print("STALE     the file changed after this plan was made; applying refuses this item")
    rationale = item.metadata.get("rationale")
    if rationale:
        print(f"why       {rationale}")
    if rejected := marked_line(item):
        print(f"REJECTED  {rejected}; never approved automatically")
    for uri in item.evidence_trajectory_uris:
        print(f"evidence  {uri}")
    print()
    status = current.fields.get("status") if current is not None else None
    for line in _colour(field_diff(item, status), _colour_wanted(args.color)):
        print(line)
    if item.kind == "upsert":
        from ovtui.memory.hunks import hunks

        numbered = hunks(item.before_content, item.after_content or "")
        if len(numbered) > 1:
            taken = (
                f" (approved: {', '.join(map(str, decision.hunks))})" if decision.hunks is not None else ""
            )
            print(f"\nHunks of content{taken}: `ovtui review approve {plan.plan_id} {args.item} --hunks 1,3`")
            lines = (line for hunk in numbered for line in hunk.lines())
            for line in _colour(lines, _colour_wanted(args.color)):
                print(line)
    return 0


def run_decide(args: argparse.Namespace) -> int:
    workspace = _open(args)
    plan_id = workspace.review.resolve_plan(args.plan)
    decision: Decision = args.decision
    undecided = [d.item for d in workspace.review.pending_plan(plan_id).decisions if d.decision == "pending"]
    chosen = list(dict.fromkeys(args.items)) or undecided
    from ovtui.core.reviewers import reviewer_name  # in here: it loads the domain's models

    reviewer = reviewer_name(args.reviewer) if args.reviewer is not None else workspace.review.reviewer
    hunks: list[int] | None = getattr(args, "hunks", None)
    if hunks is not None and len(chosen) != 1:
        raise OvtuiError("--hunks needs exactly one ITEM: hunks are numbered per item")
    key: Path | None = getattr(args, "key", None)
    plan = workspace.review.decide_items(
        plan_id, chosen, decision, args.note, reviewer=reviewer, hunks=hunks, key=key
    )
    listed = ", ".join(map(str, chosen)) or "(none: every item was decided already)"
    print(f"plan {plan_id}: {decision} item(s) {listed}; {plan.undecided} undecided (by {reviewer})")
    for index in chosen:
        approvals = workspace.review.approvals_line(plan, index)
        if approvals and plan.decisions[index].decision == "pending":
            print(f"  item {index}: {approvals}; it needs a second reviewer's approval")
    if (
        decision == "approved"
        and workspace.config.review.second_approver_for
        and workspace.review.names_are_labels
    ):
        print(
            "note: without [review] signers a reviewer's name is a label: the two-person rule counts "
            "names, it does not prove two people approved (docs/review.md#who-decided-and-how-sure)"
        )
    if not plan.undecided:
        print(f"next: `ovtui review apply {plan_id}`")
    return 0


def run_verify(args: argparse.Namespace) -> int:
    workspace = _open(args, reading=True)
    if workspace.review.names_are_labels:
        raise OvtuiError("no [review] signers in ovtui.toml: there are no signatures to check against")
    checked = workspace.review.verify_records(args.record)
    for result in checked:
        print(result.line())
    failed = sum(not c.ok for c in checked)
    print(f"{len(checked)} signed approval(s) checked, {failed} failed")
    return 1 if failed else 0


def run_apply(args: argparse.Namespace) -> int:
    from ovtui.train.review.policy import describe_apply

    workspace = _open(args)
    plan_id = workspace.review.resolve_plan(args.plan)
    approved = sum(d.decision == "approved" for d in workspace.review.pending_plan(plan_id).decisions)
    result = run_closing(workspace, workspace.review.apply_pending(plan_id, dry_run=args.dry_run))
    print(describe_apply(plan_id, result, approved=approved))
    for uri in [*result.written_uris, *result.deleted_uris]:
        print(f"  {where(workspace.reading.path_for(uri))}")
    stale_plan = result.metadata.get("stale_plan")
    if stale_plan:
        print(f"the stale item(s) wait as plan {stale_plan}: `ovtui review replan {stale_plan}`")
    changed = result.dry_run or bool(result.written_uris or result.deleted_uris) or approved == 0
    if not changed and workspace.review.is_waiting(plan_id):
        print(
            f"plan {plan_id} still waits: `ovtui review replan {plan_id}` or `ovtui review discard {plan_id}`"
        )
        return 1
    return 0


def run_discard(args: argparse.Namespace) -> int:
    workspace = _open(args)
    plan_id = workspace.review.resolve_plan(args.plan)
    workspace.review.discard_pending(plan_id)
    print(f"discarded plan {plan_id}: nothing was written")
    return 0


def run_replan(args: argparse.Namespace) -> int:
    if bool(args.plan) == bool(args.all_stale):
        raise OvtuiError("usage: ovtui review replan PLAN | ovtui review replan --all-stale")
    workspace = _open(args)
    if args.all_stale:
        result = run_closing(workspace, workspace.review.replan_stale())
        if result is None:
            print("no waiting plan has a stale item: nothing to re-plan")
            return 0
    else:
        result = run_closing(workspace, workspace.review.replan([workspace.review.resolve_plan(args.plan)]))
    print(result.describe())
    if result.plan_id is not None and result.kept:
        fresh = workspace.review.pending_plan(result.plan_id)
        for index, decision in enumerate(fresh.decisions):
            if decision.decision != "pending":
                note = f" — {decision.note}" if decision.note else ""
                print(
                    f"  kept: item {index} {fresh.plan.items[index].target_name}: {decision.decision}{note}"
                )
    for error in result.errors:
        print(f"warning: {error}", file=sys.stderr)
    return 0
