"""``ovtui history [WORKSPACE]`` lists memory_diff records; ``ovtui history show ID`` shows one;
``ovtui history verify`` checks the records' hash chain and targets (exit 1 on a problem)."""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ovtui.cli.common import open_workspace, whole_number
from ovtui.core.errors import OvtuiError
from ovtui.memory.record_kinds import RECORD_KINDS

if TYPE_CHECKING:
    from ovtui.memory.history import HistoryEntry
    from ovtui.memory.memory_diff import MemoryDiff


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    history = sub.add_parser(
        "history",
        help="list memory_diff records, newest first (`history show ID` shows one)",
        usage="ovtui history [WORKSPACE] [--kind K] [--grep TEXT] [--uri URI] [--limit N] [--json]\n"
        "       ovtui history show ID [--workspace W] [--json]\n"
        "       ovtui history verify [--workspace W] [--json]",
    )
    history.add_argument(
        "args",
        nargs="*",
        metavar="WORKSPACE | show ID | verify",
        help="a workspace, `show` and a record id, or `verify` (check the records' hash chain)",
    )
    history.add_argument("--workspace", "-w", default=None, help="the workspace (default: current folder)")
    history.add_argument("--kind", choices=RECORD_KINDS, help="only records of this kind")
    history.add_argument("--grep", metavar="TEXT", help="only records whose files or texts contain TEXT")
    history.add_argument("--uri", help="only records touching this URI (or path suffix)")
    history.add_argument("--limit", type=whole_number(0), default=None, help="at most N records")
    history.add_argument("--json", action="store_true", help="machine-readable output")
    history.set_defaults(handler=run_history)


def run_history(args: argparse.Namespace) -> int:
    rest = list(args.args)
    if rest[:1] == ["show"]:
        if len(rest) != 2:
            raise OvtuiError("usage: ovtui history show ID [--workspace W]")
        return show(args.workspace or ".", rest[1], as_json=args.json)
    if rest[:1] == ["verify"]:
        if len(rest) != 1:
            raise OvtuiError("usage: ovtui history verify [--workspace W] [--json]")
        return verify(args.workspace or ".", as_json=args.json)
    if len(rest) > 1 or (rest and args.workspace):
        raise OvtuiError("usage: ovtui history [WORKSPACE] [--kind K] [--grep TEXT] [--limit N] [--json]")
    workspace = rest[0] if rest else args.workspace or "."
    query = {"kind": args.kind, "uri": args.uri, "text": args.grep, "limit": args.limit}
    entries = open_workspace(workspace, reading=True).reading.history(**query)
    if args.json:
        print(json.dumps([e.to_json() for e in entries], indent=2, ensure_ascii=False))
        return 0
    if not entries:
        print("no history records")
        return 0
    print(f"{'ID':<29} {'WHEN (UTC)':<20} {'KIND':<17} {'CHANGES':<12} FILES")
    for entry in entries:
        print(_row(entry))
    return 0


def _row(entry: HistoryEntry) -> str:
    names = [u.rsplit("/", 1)[-1] for u in entry.uris]
    files = ", ".join(names[:3]) + (f", … (+{len(names) - 3})" if len(names) > 3 else "")
    kind = entry.kind + (f" of {entry.reverts[-6:]}" if entry.reverts else "")
    changes = f"+{entry.adds} ~{entry.updates} -{entry.deletes}"
    return f"{entry.id:<29} {entry.extracted_at:<20} {kind:<17} {changes:<12} {files or '(no changes)'}"


def verify(workspace: str, *, as_json: bool) -> int:
    report = open_workspace(workspace, reading=True).reading.verify_history()
    if as_json:
        data = {
            "ok": report.ok,
            "chained": report.chained,
            "earlier": report.earlier,
            "problems": report.problems,
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        for problem in report.problems:
            print(problem)
        print(f"{'ok' if report.ok else f'{len(report.problems)} problem(s)'}: {report.summary()}")
    return 0 if report.ok else 1


def show(workspace: str, ref: str, *, as_json: bool) -> int:
    opened = open_workspace(workspace, reading=True)
    record_id = opened.reading.resolve_record(ref)
    record = opened.reading.history_record(record_id)
    if as_json:
        print(record.render(), end="")
        return 0
    for line in describe(record_id, record):
        print(line)
    return 0


def describe(record_id: str, record: MemoryDiff) -> Iterator[str]:
    yield f"record    {record_id}"
    yield f"kind      {record.kind}" + (f" (reverts {record.reverts})" if record.reverts else "")
    yield f"when      {record.extracted_at}"
    yield f"trace     {record.trace_id}"
    if record.review.plan_id:
        yield f"plan      {record.review.plan_id}"
    s = record.summary
    yield f"changes   {s.total_adds} added, {s.total_updates} updated, {s.total_deletes} deleted"
    from ovtui.memory.memory_diff import skipped_line  # the records' models: only once one is shown

    for skipped in record.skipped_operations:
        yield f"skipped   {skipped_line(skipped)}"
    for d in record.review.decisions:
        by = f" (by {d.decided_by})" if d.decided_by else ""
        yield f"decision  item {d.item}: {d.decision}" + (f" — {d.note}" if d.note else "") + by
        if d.hunks is not None:
            taken = ", ".join(map(str, d.hunks))
            yield f"          item {d.item}: only hunks {taken} of its content approved"
        per_hunk = d.approved_by or {}
        if len(per_hunk) > 1:  # an item approved in parts: who approved which hunk
            for unit, names in per_hunk.items():
                yield f"          item {d.item}: hunk {unit} approved by {', '.join(names)}"
        if d.proposed is not None:
            yield f"          item {d.item} was edited by the reviewer; the learner proposed:"
            yield from (f"          | {line}" for line in d.proposed.splitlines())
    for key, value in record.metadata.items():
        yield f"{key:<9} {json.dumps(value, ensure_ascii=False)}"
    ops = record.operations
    for uri, before, after in (
        *((o.uri, "", o.after) for o in ops.adds),
        *((o.uri, o.before, o.after) for o in ops.updates),
        *((o.uri, o.deleted_content, "") for o in ops.deletes),
    ):
        yield ""
        rel = uri.split("/", 4)[-1] if uri.startswith("viking://") else uri
        diff = difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            fromfile=f"a/{rel}" if before else "/dev/null",
            tofile=f"b/{rel}" if after else "/dev/null",
            lineterm="",
        )
        yield from diff
