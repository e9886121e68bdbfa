"""What the subcommands of ``ovtui`` share. Each command module has ``add_parsers(sub)`` and sets
``handler`` on its parsers; it imports only cheap modules itself and the kernel inside its handlers,
so that building the parser stays quick.

``open_workspace`` is what every command that works on a workspace calls first: it checks the
folder, reads ``ovtui.toml`` and finishes an apply that a crash interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ovtui.wiring.workspace import Workspace

T = TypeVar("T")


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``minimum`` (0 really means zero)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is too small: use {minimum} or more")
        return value

    parse.__name__ = "whole number"  # argparse names the type in its own messages
    return parse


WORKSPACE_HELP = "the workspace (default: current folder)"


def add_workspace_arguments(parser: argparse.ArgumentParser, *, positional: bool = True) -> None:
    """The workspace, taken the same two ways by every command: ``WORKSPACE`` or ``-w WORKSPACE``
    (``positional=False`` where other positionals would make a trailing one ambiguous)."""
    if positional:
        parser.add_argument("workspace", nargs="?", default=None, metavar="WORKSPACE", help=WORKSPACE_HELP)
    parser.add_argument(
        "--workspace", "-w", dest="workspace_option", metavar="WORKSPACE", default=None, help=WORKSPACE_HELP
    )


def settle_workspace(args: argparse.Namespace) -> str | None:
    """Set ``args.workspace`` from whichever way it was given; a problem to report when it was given
    twice, differently."""
    if not hasattr(args, "workspace_option"):
        return None
    given, option = getattr(args, "workspace", None), args.workspace_option
    if given is not None and option is not None and Path(given) != Path(option):
        return f"the workspace is given twice ({given} and -w {option}): give it once"
    args.workspace = Path(given or option or ".")
    return None


def where(path: Path | str) -> str:
    """A path as the user can open it from where they stand: relative to the current folder when it
    lies inside it, absolute otherwise (a workspace-relative path opens nothing from elsewhere)."""
    resolved = Path(path).resolve()
    try:
        return resolved.relative_to(Path.cwd().resolve()).as_posix() or "."
    except ValueError:
        return str(resolved)


def open_workspace(root: Path | str, *, reading: bool = False) -> Workspace:
    """The workspace a command works on, after saying on stderr what start-up recovery finished
    (``reading``: a command that only reads, which works on a full or read-only disk too)."""
    from ovtui.wiring.workspace import Workspace

    workspace = Workspace(root, reading=reading)
    if workspace.recovered:
        print(f"ovtui: recovery: {workspace.recovered}", file=sys.stderr)
    return workspace


def run_closing(workspace: Workspace, work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)``, the workspace's connections of that loop closed before it ends: a
    command may run several loops over one workspace, and a client left open on a finished loop
    fails on the next one and is reported as garbage at exit ("Event loop is closed")."""
    import asyncio

    async def closing() -> T:
        try:
            return await work
        finally:
            await workspace.aclose()

    return asyncio.run(closing())
