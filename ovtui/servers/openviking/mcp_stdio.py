"""``ovtui mcp``: the MCP tools of a workspace (``mcp_tools``) to one client over stdio.

Nothing is written to stdout but the protocol: the SDK points fd 1 at stderr while it serves, and
nothing before it prints. The process ends when the client closes stdin; a commit still running
then is cancelled like one a stopping ``ovtui serve`` cancels. Its tasks live in a store of its
own (a running ``ovtui serve`` holds the workspace's), gone with the process: over stdio a commit
is answered when its memories are written, so no one polls a task afterwards.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ovtui.servers.openviking.mcp_tools import MemoryServer
from ovtui.servers.openviking.opening import close_parts, open_parts
from ovtui.wiring.workspace import Workspace


async def serve_stdio(workspace: Workspace, *, workers: int = 4) -> None:
    with tempfile.TemporaryDirectory(prefix="ovtui-mcp-tasks-") as state:
        parts = open_parts(workspace, state=Path(state), workers=workers, recoverable=False)
        try:
            await MemoryServer(parts).run_stdio_async()
        finally:
            await close_parts(parts)
