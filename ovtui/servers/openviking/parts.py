"""What the routes and the MCP tools of one server share: a view of the workspace's services, with
the session API this server opened (``workspace.agent.open_sessions``: it owns the server's task
store, pool and committer) and the server's event log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ovtui.core.events import EventBus
    from ovtui.storage.event_log import EventLog
    from ovtui.wiring.services.sessions import Sessions
    from ovtui.wiring.workspace import Workspace


@dataclass(frozen=True)
class ServerParts:
    workspace: Workspace
    sessions: Sessions
    events: EventBus  # the server's, written to ``log``
    log: EventLog
