"""What a server of a workspace opens (its routes' and MCP tools' shared parts, its event log) and
closes when it stops: ``ovtui serve`` and ``ovtui mcp`` open them alike."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from ovtui.core.context import RunContext
from ovtui.core.events import EventBus
from ovtui.servers.openviking.parts import ServerParts
from ovtui.wiring.services.run_frame import run_stamp
from ovtui.wiring.workspace import Workspace


def open_parts(
    workspace: Workspace,
    *,
    state: Path | None = None,
    workers: int = 4,
    recoverable: bool = True,
    announce: Callable[[str], None] | None = None,
) -> ServerParts:
    """What one server's routes (and its MCP tools) share. ``state``: where its task store lives
    (default: the workspace's state folder); ``recoverable``: see ``services.sessions``;
    ``announce`` hears a line per finished commit (the server's log on its output)."""
    run_id = run_stamp()
    log = workspace.parts.event_log(run_id)
    events = EventBus([log])
    run = RunContext(run_id, events, asyncio.Event())
    sessions = workspace.agent.open_sessions(
        run, tasks_folder=state, recoverable=recoverable, workers=workers, announce=announce
    )
    return ServerParts(workspace, sessions, events, log)


async def close_parts(parts: ServerParts) -> None:
    await parts.sessions.close()
    await parts.workspace.aclose()  # the clients' connections of the server's loop
    parts.log.close()
