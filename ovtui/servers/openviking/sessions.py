"""Session routes: create, list, read and configure a session; add messages; commit (archive now,
extract and train in a background task); resubmit an archive whose task failed.

Commits follow OpenViking 0.5.2: a session with no messages, or none outside the kept window,
answers 200 ``skipped`` with its reason (``no_messages``, ``all_within_keep_window``) and no task;
a session never created is a 404; ``keep_recent_count`` keeps the newest messages live; a session
with an ``auto_commit_policy`` is committed by the message write that takes its pending tokens or
live message count past a threshold. The use cases are the server's session API
(``parts.sessions``, ``wiring.services.sessions``); the routes shape its answers for the wire.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from fastapi import APIRouter, Body, Query
from fastapi.responses import JSONResponse

from ovtui.memory.retrieval.content import ACCOUNT
from ovtui.protocols.sessions import (
    AddMessageRequest,
    AddMessagesBatchRequest,
    AutoCommitPolicy,
    CommitRequest,
    CreateSessionRequest,
    UpdateSessionConfigRequest,
)
from ovtui.servers.openviking.envelope import CheckedRoute, fail, ok
from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.session_bodies import accepted_body, added_body, commit_body
from ovtui.storage.job_pool import PoolFull
from ovtui.wiring.services.sessions import SessionRead, StillRunning

NO_BODY = Body(None)  # OpenViking clients may POST without a body
# OpenViking's event tags per memory type: ovtui has none to set.
NO_EXTRACTION_CONFIG: dict[str, Any] = {"events": {"tags": []}}

# The fields of OpenViking 0.5.2's session for what ovtui does not have, at the values OpenViking
# answers when they are off: no turn-budget retention, no idle scanner, no embedding per session.
NO_RETENTION: dict[str, Any] = {
    "retention_mode": "",
    "keep_recent_turn_count": 0,
    "retained_message_token_budget": 0,
    "min_raw_tail_steps": 1,
    "last_idle_commit_accepted_at": "",
    "embedding_token_usage": {"total_tokens": 0},
}


def owner(user: str) -> dict[str, Any]:
    """Whose session it is, as OpenViking names it (ovtui serves one account, OpenViking's dev one)."""
    return {
        "created_by_account_id": ACCOUNT,
        "created_by_user_id": user,
        "user": {"account_id": ACCOUNT, "user_id": user},
    }


def folder_time(modified: float) -> str:
    """A folder's modification time as OpenViking lists it: UTC, whole seconds, ``Z``."""
    return datetime.fromtimestamp(modified, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def auto_commit(
    request: CreateSessionRequest | UpdateSessionConfigRequest,
) -> AutoCommitPolicy | Literal["unchanged"] | None:
    """The automatic-commit policy a request sets: its own (None: off), or, when it names none,
    ``unchanged``."""
    if "auto_commit_policy" not in request.model_fields_set:
        return "unchanged"
    return request.auto_commit_policy.effective() if request.auto_commit_policy else None


def sessions_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"], route_class=CheckedRoute)
    sessions = parts.sessions

    def session_body(read: SessionRead) -> dict[str, Any]:
        state = read.state
        return {
            **state.meta.model_dump(mode="json"),
            **owner(sessions.user),
            **NO_RETENTION,
            "uri": read.uri,
            "message_count": state.message_count,
            "pending_tokens": state.pending_tokens,
            "archives": read.archives,
            "memory_extraction_config": NO_EXTRACTION_CONFIG,
        }

    @router.post("")
    async def create_session(request: CreateSessionRequest | None = NO_BODY) -> JSONResponse:
        request = request or CreateSessionRequest()
        meta = await sessions.create(request.session_id, request.memory_policy, auto_commit(request))
        return ok(
            {
                "session_id": meta.session_id,
                "uri": sessions.uri(meta.session_id),
                **meta.model_dump(mode="json"),
                "user": owner(sessions.user)["user"],
                "memory_extraction_config": NO_EXTRACTION_CONFIG,
            }
        )

    @router.get("")
    async def list_sessions() -> JSONResponse:
        return ok(
            [
                {
                    "session_id": s.session_id,
                    "uri": s.uri,
                    "is_dir": True,
                    "mod_time": folder_time(s.modified),
                }
                for s in await sessions.listed()
            ]
        )

    @router.get("/{session_id}")
    async def get_session(session_id: str, auto_create: bool = Query(False)) -> JSONResponse:
        return ok(session_body(await sessions.read(session_id, auto_create=auto_create)))

    @router.patch("/{session_id}/config")
    async def configure(
        session_id: str, request: UpdateSessionConfigRequest | None = NO_BODY
    ) -> JSONResponse:
        request = request or UpdateSessionConfigRequest()
        meta = await sessions.configure(session_id, auto_commit(request))
        return ok(
            {
                "session_id": meta.session_id,
                "auto_commit_policy": meta.model_dump(mode="json")["auto_commit_policy"],
                "memory_extraction_config": NO_EXTRACTION_CONFIG,
            }
        )

    @router.post("/{session_id}/messages")
    async def add_message(session_id: str, request: AddMessageRequest) -> JSONResponse:
        return ok(added_body(await sessions.add(session_id, [request])))

    @router.post("/{session_id}/messages/batch")
    async def add_messages(session_id: str, request: AddMessagesBatchRequest) -> JSONResponse:
        return ok(added_body(await sessions.add(session_id, request.messages)))

    @router.post("/{session_id}/commit")
    async def commit(session_id: str, request: CommitRequest | None = NO_BODY) -> JSONResponse:
        keep = (request or CommitRequest()).keep_recent_count
        try:
            done = await sessions.commit(session_id, keep)
        except PoolFull as exc:
            return fail("RESOURCE_EXHAUSTED", str(exc), 429)
        return ok(commit_body(done))

    @router.post("/{session_id}/archives/{archive_id}/resubmit")
    async def resubmit(session_id: str, archive_id: str) -> JSONResponse:
        """Commit an archive again whose task failed or was interrupted (its memories unwritten)."""
        try:
            done = await sessions.resubmit(session_id, archive_id)
        except PoolFull as exc:
            return fail("RESOURCE_EXHAUSTED", str(exc), 429)
        if isinstance(done, StillRunning):
            return fail(
                "FAILED_PRECONDITION", f"{done.archive}: its task {done.task_id} is still running", 409
            )
        return ok(accepted_body(done.session_id, done.task_id, done.archive_uri))

    return router
