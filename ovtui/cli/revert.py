"""``ovtui revert ID``: apply the inverse of a history record (refuses if files changed since)."""

from __future__ import annotations

import argparse

from ovtui.cli.common import add_workspace_arguments, open_workspace, run_closing
from ovtui.core.errors import RevertConflictError


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("revert", help="apply the inverse of a history record")
    parser.add_argument("id", metavar="ID", help="a history record id (or a unique part of one)")
    add_workspace_arguments(parser)
    parser.add_argument("--dry-run", action="store_true", help="check and record, write no memory file")
    parser.add_argument(
        "--force", action="store_true", help="revert even files that changed after the record"
    )
    parser.set_defaults(handler=run_revert)


def run_revert(args: argparse.Namespace) -> int:
    workspace = open_workspace(args.workspace)
    try:
        result = run_closing(
            workspace, workspace.review.revert(args.id, dry_run=args.dry_run, force=args.force)
        )
    except RevertConflictError as exc:
        raise RevertConflictError(f"{exc} (use --force to revert anyway)", exc.conflicts) from None
    head = "dry run: would revert" if result.dry_run else "reverted"
    counts = f"{len(result.written_uris)} written, {len(result.deleted_uris)} deleted"
    print(f"{head} {result.reverted} ({counts}); record {result.history_id}")
    for uri in [*result.written_uris, *result.deleted_uris]:
        print(f"  {workspace.reading.display_path(uri)}")
    if result.conflicts:
        print(f"forced over later changes to: {', '.join(result.conflicts)}")
    return 0
