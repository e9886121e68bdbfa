"""``ovtui init DIR [--sample]``: make a folder a workspace (never over an existing one)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ovtui.config import CONFIG_NAME, OvtuiConfig, save_config
from ovtui.errors import OvtuiError
from ovtui.workspace.paths import WorkspacePaths

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
    parser.add_argument("workspace", nargs="?", default=".", type=Path)
    parser.add_argument(
        "--sample", action="store_true", help="with the sample environment: starter memories and a dataset"
    )
    parser.set_defaults(handler=run_init)


def init_workspace(root: Path, *, sample: bool = False) -> WorkspacePaths:
    if (root / CONFIG_NAME).exists() or (root / "memories").exists():
        raise OvtuiError(f"{root} is already a workspace: nothing was changed")
    if sample:
        from ovtui.sample_env.workspace import write_sample_workspace

        write_sample_workspace(root)
    else:
        root.mkdir(parents=True, exist_ok=True)
        save_config(root, OvtuiConfig())
    paths = WorkspacePaths(root)
    for folder in FOLDERS:
        (paths.root / folder).mkdir(parents=True, exist_ok=True)
    return paths


def run_init(args: argparse.Namespace) -> int:
    paths = init_workspace(args.workspace, sample=args.sample)
    print(f"workspace ready: {paths.root}")
    datasets = paths.relative(paths.datasets)
    print(f"next: add cases to {datasets}/<name>/{{train,test}}.jsonl, then `ovtui {args.workspace}`")
    return 0
