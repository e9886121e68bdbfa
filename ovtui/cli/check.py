"""``ovtui check [WORKSPACE]``: exit 0 with a summary, or 1 listing ``path:line: message`` per problem.

Besides memory files, datasets and the config, ``[keys]`` is checked against the app's bindings
(unknown ids, two actions on one key in a screen); the app's binding list is imported only here,
and the check is skipped when the app is not part of the build.
"""

from __future__ import annotations

import argparse
import importlib

from ovtui.checks.keymap import DeclaredBinding, keymap_problems
from ovtui.checks.workspace import Problem, check_workspace
from ovtui.cli.common import open_store
from ovtui.core.errors import ConfigError
from ovtui.memory.store import MemoryStore
from ovtui.storage.config_file import load_config
from ovtui.storage.paths import CONFIG_FILE


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("check", help="validate every memory file, dataset line and the config")
    parser.add_argument("workspace", nargs="?", default=".", help="the workspace (default: current folder)")
    parser.set_defaults(handler=run_check)


def key_problems(store: MemoryStore) -> list[Problem]:
    try:
        keymap = load_config(store.paths.root).keys
    except ConfigError:
        return []  # check_workspace reports the broken config itself
    if not keymap:
        return []
    try:  # imported by name, as `ovtui` opens the app: only this command needs Textual
        app = importlib.import_module("ovtui.app.app")
    except ModuleNotFoundError:
        return []
    declared: list[DeclaredBinding] = app.declared_bindings()
    config = store.paths.root / CONFIG_FILE
    lines = config.read_text(encoding="utf-8").splitlines()
    found = []
    for binding_id, message in keymap_problems(keymap, declared):
        line = next((n for n, text in enumerate(lines, 1) if binding_id in text), 1)
        found.append(Problem(CONFIG_FILE, line, message))
    return found


def run_check(args: argparse.Namespace) -> int:
    store = open_store(args.workspace, strict_config=False)
    report = check_workspace(store)
    report.problems += key_problems(store)
    for note in report.notes:
        print(f"note: {note}")
    for problem in report.problems:
        print(problem)
    if not report.ok:
        print(f"{len(report.problems)} problem(s); checked {report.summary()}")
        return 1
    print(f"ok: {report.summary()}")
    return 0
