"""What a server of a workspace opens (its routes' and MCP tools' shared parts, its event log) and
closes when it stops: ``ovtui serve`` and ``ovtui mcp`` open them alike."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from ovtui.core.context import RunContext
from ovtui.core.events import EventBus
from ovtui.servers.openviking.commit_tasks import TASK_PREFIX
from ovtui.servers.openviking.parts import ServerParts
from ovtui.wiring.services.run_frame import run_stamp
from ovtui.wiring.workspace import Workspace

if TYPE_CHECKING:
    from ovtui.storage.event_log import EventLog


def open_parts(workspace: Workspace, *, state: Any = None, workers: int = 4) -> tuple[ServerParts, EventLog]:
    """What one server's routes (and its MCP tools) share, and the event log it writes to."""
    run_id = run_stamp()
    log = workspace.parts.event_log(run_id)
    events = EventBus([log])
    sessions = workspace.parts.sessions
    tasks = workspace.parts.session_tasks(state, prefix=TASK_PREFIX)
    parts = ServerParts(
        workspace=workspace,
        sessions=sessions,
        committer=workspace.parts.session_committer(RunContext(run_id, events, asyncio.Event())),
        tasks=tasks,
        events=events,
        workers=workers,
    )
    sessions.on_wait = lambda session_id: parts.say(
        f"session {session_id!r} is locked by another process: waiting for it"
    )
    sessions.on_notice = tasks.on_log_error = parts.say
    return parts, log


async def close_parts(parts: ServerParts, log: EventLog) -> None:
    await parts.close()
    await parts.committer.close()
    await parts.workspace.aclose()  # the clients' connections of the server's loop
    parts.tasks.close()
    log.close()
