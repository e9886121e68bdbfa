"""``ovtui init DIR [--sample]``: make a folder a workspace (never over an existing one)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ovtui.cli.common import add_workspace_arguments, where
from ovtui.core.config import OvtuiConfig
from ovtui.core.errors import OvtuiError
from ovtui.storage.config_file import save_config
from ovtui.storage.fsio import make_dirs
from ovtui.storage.paths import CONFIG_FILE, WorkspacePaths

FOLDERS = (
    "memories/experiences",
    "memories/trajectories",
    "memories/cases",
    "datasets",
    "inbox/rollouts",
    "inbox/sessions",
)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("init", help="create a workspace in DIR (ovtui.toml and the folders)")
    add_workspace_arguments(parser)
    parser.add_argument(
        "--sample", action="store_true", help="with the sample environment: starter memories and a dataset"
    )
    parser.set_defaults(handler=run_init)


def init_workspace(root: Path, *, sample: bool = False) -> WorkspacePaths:
    if (root / CONFIG_FILE).exists() or (root / "memories").exists():
        raise OvtuiError(f"{root} is already a workspace: nothing was changed")
    if sample:
        from ovtui.environments.sample.workspace import write_sample_workspace

        write_sample_workspace(root)
    else:
        root.mkdir(parents=True, exist_ok=True)
        save_config(root, OvtuiConfig())
    paths = WorkspacePaths(root)
    for folder in FOLDERS:
        make_dirs(paths.root / folder, root=paths.root)
    return paths


def next_steps(root: Path, *, sample: bool) -> list[str]:
    """What to run next, with paths that work from the current folder."""
    ws = shlex.quote(where(root))
    if sample:
        return [
            f"next: `ovtui train {ws} --epochs 3 --approve all` trains the sample agent on its cases,",
            f"      or `ovtui {ws}` opens the app",
        ]
    return [
        f"next: add cases to {where(root / 'datasets')}/<name>/{{train,test}}.jsonl (see docs/cases.md),",
        f"      then `ovtui train {ws} --dataset <name>` or `ovtui {ws}`",
    ]


def run_init(args: argparse.Namespace) -> int:
    paths = init_workspace(args.workspace, sample=args.sample)
    print(f"workspace ready: {where(paths.root)}")
    for line in next_steps(paths.root, sample=args.sample):
        print(line)
    return 0
