"""The ``ovtui`` command: ``ovtui [WORKSPACE]`` opens the app, subcommands run the kernel headless.

Each subcommand lives in a small module with ``add_parsers(sub)``; ``COMMANDS`` maps a command
name to its module so only the module of the command being run is imported (start-up stays fast).
Kernel errors (OvtuiError) print as one line on stderr and exit 2, never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from ovtui.core.errors import OvtuiError

# command name -> module defining it. Add new commands here.
COMMANDS: dict[str, str] = {
    "train": "ovtui.cli.train",
    "eval": "ovtui.cli.train",
    "history": "ovtui.cli.history",
    "revert": "ovtui.cli.revert",
    "check": "ovtui.cli.check",
    "init": "ovtui.cli.init",
    "review": "ovtui.cli.review",
    "env": "ovtui.cli.env",
    "serve": "ovtui.cli.sessions",
    "commit": "ovtui.cli.sessions",
}
# `ovtui [WORKSPACE]` is `ovtui app [WORKSPACE]`.
APP_COMMAND = "app"
APP_MODULE = "ovtui.app"


def _version() -> str:
    try:
        return version("ovtui")
    except PackageNotFoundError:
        return "unknown"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one holding just that command's module."""
    parser = argparse.ArgumentParser(
        prog="ovtui",
        description="Human-in-the-loop training of an agent's experience memory.",
        epilog="Without a command, `ovtui [WORKSPACE]` opens the app on WORKSPACE (default: current folder).",
    )
    parser.add_argument("--version", action="version", version=f"ovtui {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    app = sub.add_parser(APP_COMMAND, help="open the app (what `ovtui [WORKSPACE]` does)")
    app.add_argument("workspace", nargs="?", default=".", type=Path)
    app.set_defaults(handler=run_app)
    modules = [COMMANDS[only]] if only in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(name).add_parsers(sub)
    return parser


def run_app(args: argparse.Namespace) -> int:
    try:
        module = importlib.import_module(APP_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != APP_MODULE:
            raise
        raise OvtuiError(
            "the terminal app is not part of this build; see `ovtui --help` for the commands"
        ) from None
    return int(module.run(args.workspace) or 0)


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return "; ".join(lines) or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    first = args_in[0] if args_in else None
    if first is None or (first not in COMMANDS and first != APP_COMMAND and not first.startswith("-")):
        args_in = [APP_COMMAND, *args_in]
        first = APP_COMMAND
    try:
        args = build_parser(first).parse_args(args_in)
    except SystemExit as exit_:  # --help, --version, usage errors: argparse already printed
        return exit_.code if isinstance(exit_.code, int) else 2
    try:
        return int(args.handler(args) or 0)
    except OvtuiError as exc:
        print(f"ovtui: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `ovtui history | head`: the reader left, which is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
