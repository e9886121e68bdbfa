"""The ``ovtui`` command: ``ovtui [WORKSPACE]`` opens the app, subcommands run the kernel headless.

Each subcommand lives in a small module with ``add_parsers(sub)``, imported here like any module
(so the import contracts see every edge); a command module imports only cheap modules itself and
the kernel inside its handlers, so building the parser stays quick and ``ovtui --help`` loads
neither the app, the servers nor the model client.
Kernel errors (OvtuiError) print as one line on stderr and exit 2, never as a traceback; so do
the errors of the disk (OSError: full, read-only, no permission, gone), naming the file and the cause.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from ovtui.cli import (
    adherence,
    check,
    compare,
    doctor,
    env,
    history,
    init,
    mcp_command,
    revalidate,
    revert,
    review,
    sessions,
    train,
    utility,
)
from ovtui.cli.common import WORKSPACE_HELP, settle_workspace
from ovtui.core.errors import OvtuiError
from ovtui.core.suggest import closest

# command name -> the module defining it. Add new commands here.
COMMANDS: dict[str, ModuleType] = {
    "train": train,
    "eval": train,
    "history": history,
    "revert": revert,
    "check": check,
    "doctor": doctor,
    "init": init,
    "review": review,
    "env": env,
    "serve": sessions,
    "commit": sessions,
    "mcp": mcp_command,
    "compare": compare,
    "report": compare,
    "utility": utility,
    "revalidate": revalidate,
    "adherence": adherence,
}
# `ovtui [WORKSPACE]` is `ovtui app [WORKSPACE]`.
APP_COMMAND = "app"
APP_PACKAGE = "ovtui.app"


class _VersionAction(argparse.Action):
    """``--version``, reading the installed version only when asked: importlib.metadata costs
    tens of milliseconds that every other command would pay."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **_: object) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from ovtui.core.about import ovtui_version

        print(f"ovtui {ovtui_version()}")  # on stdout, where argparse's own version action prints
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one holding just that command's module."""
    parser = argparse.ArgumentParser(
        prog="ovtui",
        description="Human-in-the-loop training of an agent's experience memory.",
        epilog="Without a command, `ovtui [WORKSPACE]` opens the app on WORKSPACE (default: current folder).",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    app = sub.add_parser(APP_COMMAND, help="open the app (what `ovtui [WORKSPACE]` does)")
    app.add_argument("workspace", nargs="?", default=".", type=Path, help=WORKSPACE_HELP)
    app.set_defaults(handler=run_app)
    modules = [COMMANDS[only]] if only in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        module.add_parsers(sub)
    _name_command_parsers(parser)
    return parser


def _name_command_parsers(parser: argparse.ArgumentParser) -> None:
    """Each (sub)command's parser as its own default ``command_parser``: the innermost one given wins."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command_parser in action.choices.values():
                command_parser.set_defaults(command_parser=command_parser)
                _name_command_parsers(command_parser)


def run_app(args: argparse.Namespace) -> int:
    try:  # imported here: only the app needs Textual, and a build may come without the app
        from ovtui.app import run
    except ModuleNotFoundError as exc:
        if exc.name != APP_PACKAGE:
            raise
        raise OvtuiError(
            "the terminal app is not part of this build; see `ovtui --help` for the commands"
        ) from None
    return int(run(args.workspace) or 0)


def _one_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return "; ".join(lines) or type(exc).__name__


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    first = args_in[0] if args_in else None
    if first is None or (first not in COMMANDS and first != APP_COMMAND and not first.startswith("-")):
        meant = None if first is None or Path(first).exists() else closest(first, [*COMMANDS, APP_COMMAND])
        if meant is not None:  # `ovtui trian`: a misspelt command, not a workspace that is missing
            said = f"{first!r} is not a command or a folder — did you mean {meant!r}?"
            print(f"ovtui: error: {said}", file=sys.stderr)
            return 2
        args_in = [APP_COMMAND, *args_in]
        first = APP_COMMAND
    parser = build_parser(first)
    try:
        args, extras = parser.parse_known_args(args_in)
        # A usage problem is told with the usage of the command it is in, not the top level's.
        command_parser: argparse.ArgumentParser = getattr(args, "command_parser", parser)
        if extras:
            command_parser.error(f"unrecognized arguments: {' '.join(extras)}")
        problem = settle_workspace(args)
        if problem:
            command_parser.error(problem)
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
    except OSError as exc:
        from ovtui.cli.common import where
        from ovtui.storage.faults import os_error_line

        print(f"ovtui: error: {os_error_line(exc, where)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
