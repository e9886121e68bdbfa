"""``ovtui mcp [WORKSPACE]``: the workspace's memories to an MCP client over stdio (search, read,
list; add messages to a session and commit it). ``ovtui serve`` serves the same tools at ``/mcp``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = sub.add_parser(
        "mcp", help="serve the workspace's memories to an MCP client over stdio (its config: docs/agents.md)"
    )
    mcp.add_argument(
        "workspace", nargs="?", default=".", type=Path, help="the workspace folder (default: the current one)"
    )
    mcp.add_argument("--workers", type=int, default=4, help="commits extracted at once")
    mcp.set_defaults(handler=run_mcp)


def run_mcp(args: argparse.Namespace) -> int:
    # stdout is the protocol's: every log line goes to stderr (configured before the SDK's own).
    import logging

    from ovtui.cli.common import open_workspace, run_closing
    from ovtui.servers.openviking.mcp_stdio import serve_stdio

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="ovtui mcp: %(message)s")
    workspace = open_workspace(args.workspace)
    run_closing(workspace, serve_stdio(workspace, workers=max(1, args.workers)))
    return 0
