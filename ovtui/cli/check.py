"""``ovtui check [WORKSPACE] [--fix]``: exit 0 with a summary, or 1 listing ``path:line: message`` per
problem. ``--fix`` first moves memory files in a former layout to their type's current one (one
journaled History record, undone by ``ovtui revert``), then checks.

Besides memory files, datasets and the config, ``[keys]`` is checked against the app's bindings
(unknown ids, two actions on one key in a screen); the app's binding list is imported only here,
and the check is skipped when the app is not part of the build.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ovtui.cli.common import add_workspace_arguments

if TYPE_CHECKING:
    from ovtui.checks.workspace import Problem
    from ovtui.memory.store import MemoryStore


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("check", help="validate every memory file, dataset line and the config")
    add_workspace_arguments(parser)
    parser.add_argument(
        "--notes", action="store_true", help="one by one: each experience line the agent cannot act on"
    )
    parser.add_argument(
        "--fix",
        action="store_true",
        help="first move memory files in a former layout to where OpenViking files them (revertible)",
    )
    parser.set_defaults(handler=run_check)


def key_problems(store: MemoryStore) -> list[Problem]:
    from ovtui.checks.keymap import DeclaredBinding, keymap_problems
    from ovtui.checks.workspace import Problem
    from ovtui.core.errors import ConfigError
    from ovtui.storage.config_file import load_config
    from ovtui.storage.paths import CONFIG_FILE

    try:
        keymap = load_config(store.paths.root).keys
    except ConfigError:
        return []  # check_workspace reports the broken config itself
    if not keymap:
        return []
    try:  # imported here: only this command needs Textual, and a build may come without the app
        from ovtui.app.app import declared_bindings
    except ModuleNotFoundError:
        return []
    declared: list[DeclaredBinding] = declared_bindings()
    config = store.paths.root / CONFIG_FILE
    lines = config.read_text(encoding="utf-8").splitlines()
    found = []
    for binding_id, message in keymap_problems(keymap, declared):
        line = next((n for n, text in enumerate(lines, 1) if binding_id in text), 1)
        found.append(Problem(CONFIG_FILE, line, message))
    return found


def print_fix(store: MemoryStore) -> None:
    from ovtui.checks.workspace import fix_layouts

    moved = fix_layouts(store)
    for old, new in moved.moved.items():
        print(f"moved {old} → {new}")
    for skipped in moved.skipped:
        where = store.paths.relative_of(skipped.uri) if skipped.uri else skipped.memory_type
        print(f"not moved {where}: {skipped.reason}")
    if moved.history_id:
        record = moved.history_id
        print(
            f"fixed: {len(moved.moved)} file(s) moved in history record {record} "
            f"(`ovtui revert {record}` undoes it)"
        )
    elif not moved.skipped:
        print("fixed: nothing to move")


def run_check(args: argparse.Namespace) -> int:
    from ovtui.checks.workspace import check_workspace
    from ovtui.wiring.workspace import memory_to_check

    store, recovered = memory_to_check(args.workspace)
    if recovered:
        print(f"ovtui: recovery: {recovered}", file=sys.stderr)
    if args.fix:
        print_fix(store)
    report = check_workspace(store)
    report.problems += key_problems(store)
    for note in report.notes:
        print(f"note: {note}")
    if args.notes:
        for note in report.unread_lines:
            print(f"note: {note}")
    elif report.unread_lines:
        files = len({line.path for line in report.unread_lines})
        print(
            f"note: {len(report.unread_lines)} experience line(s) in {files} file(s) are not understood by "
            f"{report.unread_by} (fine for text meant for people); `--notes` lists them"
        )
    for problem in report.problems:
        print(problem)
    if not report.ok:
        print(f"{len(report.problems)} problem(s); checked {report.summary()}")
        return 1
    print(f"ok: {report.summary()}")
    return 0
