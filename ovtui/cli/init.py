"""``ovtui init DIR [--sample]``: make a folder a workspace (never over an existing one)."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ovtui.cli.common import add_workspace_arguments, where
from ovtui.core.errors import OvtuiError

if TYPE_CHECKING:
    from ovtui.core.config import OvtuiConfig
    from ovtui.storage.paths import WorkspacePaths

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


# System folders whose files are the kernel's, not files: a workspace there makes no sense.
SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")


def _written() -> tuple[str, ...]:
    """What init writes at the top of the folder; what of it was not there before goes again on failure."""
    from ovtui.storage.paths import CONFIG_FILE  # in here: building the parser loads no storage

    return (CONFIG_FILE, "memories", "datasets", "inbox")


def refuse_target(root: Path) -> None:
    """One line for a target that cannot become a workspace: a file, a system folder, a workspace."""
    real = os.path.realpath(root)
    system = next((f for f in SYSTEM_FOLDERS if real == f or real.startswith(f + os.sep)), None)
    if system is not None:
        raise OvtuiError(f"{root} is in {system}, a system folder of the kernel: choose another folder")
    if root.exists() and not root.is_dir():
        raise OvtuiError(f"{root} is a file, not a folder: give the folder to make the workspace in")
    from ovtui.storage.paths import CONFIG_FILE

    if (root / CONFIG_FILE).exists() or (root / "memories").exists():
        raise OvtuiError(f"{root} is already a workspace: nothing was changed")


def fresh_config() -> OvtuiConfig:
    """A new workspace's settings: the defaults, with a fifth of train held out as the validation
    split for a dataset that brings none (the test split is sealed: runs never score it unasked)."""
    from ovtui.core.config import OvtuiConfig, TrainerConfig

    return OvtuiConfig(trainer=TrainerConfig(validation=0.2))


def init_workspace(root: Path, *, sample: bool = False) -> WorkspacePaths:
    """Make ``root`` a workspace, all or nothing: when a write fails (a full or read-only disk, no
    permission) what this call made is removed again and the error raised."""
    from ovtui.storage.config_file import save_config
    from ovtui.storage.fsio import make_dirs, make_root
    from ovtui.storage.paths import WorkspacePaths

    refuse_target(root)
    first_new = _first_missing(root)
    before = {name for name in _written() if os.path.lexists(root / name)}
    try:
        make_root(root)
        if sample:
            from ovtui.environments.sample.workspace import write_sample_workspace

            write_sample_workspace(root)
        else:
            save_config(root, fresh_config())
        paths = WorkspacePaths(root)
        for folder in FOLDERS:
            make_dirs(paths.root / folder, root=paths.root)
    except BaseException:
        _undo(root, first_new, before)
        raise
    return paths


def _first_missing(root: Path) -> Path | None:
    """The outermost folder on the way to ``root`` (``root`` included) that does not exist yet."""
    missing = None
    for folder in (root.absolute(), *root.absolute().parents):
        if os.path.lexists(folder):
            break
        missing = folder
    return missing


def _undo(root: Path, first_new: Path | None, before: set[str]) -> None:
    if first_new is not None:  # every folder from there down is this call's own
        shutil.rmtree(first_new, ignore_errors=True)
        return
    for name in _written():
        if name in before:
            continue
        path = root / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()


def next_steps(root: Path, *, sample: bool) -> list[str]:
    """What to run next, with paths that work from the current folder."""
    ws = shlex.quote(where(root))
    if sample:
        return [
            f"next: `ovtui train {ws} --epochs 3 --approve all` trains the sample agent on its cases,",
            f"      or `ovtui {ws}` opens the app",
        ]
    return [
        f"next: add cases to {where(root / 'datasets')}/<name>/{{train,validation,test}}.jsonl "
        "(see docs/cases.md;",
        "      without validation.jsonl, [trainer] validation = 0.2 holds a fifth of train out),",
        f"      then `ovtui train {ws} --dataset <name>` or `ovtui {ws}`",
    ]


def run_init(args: argparse.Namespace) -> int:
    paths = init_workspace(args.workspace, sample=args.sample)
    print(f"workspace ready: {where(paths.root)}")
    for line in next_steps(paths.root, sample=args.sample):
        print(line)
    return 0
