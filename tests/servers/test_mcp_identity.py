"""What ``ovtui mcp`` tells a client about itself, and what its ``--help`` says of its argument."""

from __future__ import annotations

import os
import sys
from importlib.metadata import version
from pathlib import Path

from cli_support import run_ovtui
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from workspace_support import build_sample_workspace


async def test_the_server_names_its_version(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ovtui", "mcp", str(root)], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        hello = await session.initialize()
    assert hello.server_info.name == "ovtui" and hello.server_info.version == version("ovtui")


def test_mcp_help_says_what_its_workspace_is(tmp_path: Path) -> None:
    done = run_ovtui("mcp", "--help", cwd=tmp_path, timeout=60)
    assert done.returncode == 0
    assert "the workspace folder (default: the current one)" in " ".join(done.stdout.split())
