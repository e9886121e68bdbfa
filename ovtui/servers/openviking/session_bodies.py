"""The session API's answers as OpenViking 0.5.2 shapes them, for the routes and the MCP tools
alike: what adding messages and a commit answer (``services.sessions`` gives the results)."""

from __future__ import annotations

from typing import Any

from ovtui.wiring.services.sessions import Accepted, Added, NotCommitted


def skipped_body(session_id: str, reason: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "status": "skipped",
        "task_id": None,
        "archive_uri": None,
        "archived": False,
        "effective_enable_working_memory": False,
        "reason": reason,
        "trace_id": "",
        **({"estimated_active_tokens": 0, "budget_exceeded": False} if reason != "no_messages" else {}),
    }


def accepted_body(session_id: str, task_id: str, archive_uri: str) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "status": "accepted",
        "task_id": task_id,
        "archive_uri": archive_uri,
        "archived": True,
        "effective_enable_working_memory": False,  # ovtui keeps no working memory
        "trace_id": "",
        "estimated_active_tokens": 0,  # OpenViking's turn-budget retention: not ovtui's
        "budget_exceeded": False,
    }


def commit_body(done: Accepted | NotCommitted) -> dict[str, Any]:
    if isinstance(done, NotCommitted):
        return skipped_body(done.session_id, done.reason)
    return accepted_body(done.session_id, done.task_id, done.archive_uri)


def added_body(added: Added) -> dict[str, Any]:
    body: dict[str, Any] = {
        "session_id": added.session_id,
        "message_count": added.message_count,
        "pending_tokens": added.pending_tokens,
        "added": added.added,
    }
    auto = added.auto_commit
    if auto is not None:
        body["auto_commit"] = {"task_id": auto.task_id, "archive_uri": auto.archive_uri}
    return body
