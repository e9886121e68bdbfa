"""Session routes: create, list, read and configure a session; add messages; commit (archive now,
extract and train in a background task); resubmit an archive whose task failed.

Commits follow OpenViking 0.5.2: a session with no messages, or none outside the kept window,
answers 200 ``skipped`` with its reason (``no_messages``, ``all_within_keep_window``) and no task;
a session never created is a 404; ``keep_recent_count`` keeps the newest messages live; a session
with an ``auto_commit_policy`` is committed by the message write that takes its pending tokens or
live message count past a threshold. Every file call runs through ``parts.calls`` (a worker thread,
never waiting for a lock in a shared one).
"""

from __future__ import annotations

import os
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
    MemoryPolicy,
    UpdateSessionConfigRequest,
)
from ovtui.servers.base.pool import PoolFull
from ovtui.servers.openviking.commit_tasks import CommitTasks, task_label
from ovtui.servers.openviking.envelope import CheckedRoute, fail, ok
from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.session_writes import SessionWrites, accepted_body
from ovtui.sessions.store import LiveState, SessionError

NO_BODY = Body(None)  # OpenViking clients may POST without a body
# OpenViking's event tags per memory type: ovtui has none to set.
NO_EXTRACTION_CONFIG: dict[str, Any] = {"events": {"tags": []}}

# OpenViking's memory types that ovtui never extracts: a policy naming them is accepted (they are
# simply never written); any other name not declared in the workspace is a mistake, named.
OPENVIKING_ONLY_TYPES = frozenset({"patterns", "tools", "skills"})

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


def folder_time(path: str) -> str:
    """A folder's modification time as OpenViking lists it: UTC, whole seconds, ``Z``."""
    return datetime.fromtimestamp(os.stat(path).st_mtime, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_memory_types(policy: MemoryPolicy | None, declared: list[str]) -> None:
    known = {*declared, *OPENVIKING_ONLY_TYPES}
    unknown = [t for t in (policy.memory_types if policy else None) or [] if t not in known]
    if unknown:
        raise SessionError(
            f"memory_policy.memory_types: unknown type(s) {', '.join(map(repr, unknown))} "
            f"(declared: {', '.join(sorted(declared))})"
        )


def sessions_router(parts: ServerParts, commits: CommitTasks, writes: SessionWrites) -> APIRouter:
    router = APIRouter(prefix="/api/v1/sessions", tags=["sessions"], route_class=CheckedRoute)
    sessions, workspace, calls = parts.sessions, parts.workspace, parts.calls

    def session_body(state: LiveState) -> dict[str, Any]:
        meta = state.meta
        return {
            **meta.model_dump(mode="json"),
            **owner(sessions.paths.user),
            **NO_RETENTION,
            "uri": sessions.uri(meta.session_id),
            "message_count": state.message_count,
            "pending_tokens": state.pending_tokens,
            "archives": [a.name for a in sessions.archives(meta.session_id)],
            "memory_extraction_config": NO_EXTRACTION_CONFIG,
        }

    @router.post("")
    async def create_session(request: CreateSessionRequest | None = NO_BODY) -> JSONResponse:
        request = request or CreateSessionRequest()
        check_memory_types(request.memory_policy, workspace.reading.memory_types())
        auto: AutoCommitPolicy | Literal["unchanged"] | None = "unchanged"
        if "auto_commit_policy" in request.model_fields_set:
            auto = request.auto_commit_policy.effective() if request.auto_commit_policy else None
        meta = await calls.run(sessions.create, request.session_id, request.memory_policy, auto)
        return ok(
            {
                "session_id": meta.session_id,
                "uri": sessions.uri(meta.session_id),
                **meta.model_dump(mode="json"),
                "user": owner(sessions.paths.user)["user"],
                "memory_extraction_config": NO_EXTRACTION_CONFIG,
            }
        )

    def listed_sessions() -> list[dict[str, Any]]:
        found = []
        for session_id in sessions.list_ids():
            try:
                when = folder_time(str(sessions.folder(session_id)))
            except FileNotFoundError:
                continue  # deleted while listing
            found.append(
                {"session_id": session_id, "uri": sessions.uri(session_id), "is_dir": True, "mod_time": when}
            )
        return found

    @router.get("")
    async def list_sessions() -> JSONResponse:
        return ok(await calls.run(listed_sessions))

    def read_session(session_id: str, auto_create: bool) -> dict[str, Any]:
        if auto_create:
            sessions.ensure(session_id)
        return session_body(sessions.live(session_id))

    @router.get("/{session_id}")
    async def get_session(session_id: str, auto_create: bool = Query(False)) -> JSONResponse:
        return ok(await calls.run(read_session, session_id, auto_create))

    @router.patch("/{session_id}/config")
    async def configure(
        session_id: str, request: UpdateSessionConfigRequest | None = NO_BODY
    ) -> JSONResponse:
        request = request or UpdateSessionConfigRequest()
        if "auto_commit_policy" in request.model_fields_set:
            policy = request.auto_commit_policy.effective() if request.auto_commit_policy else None
            meta = await calls.run(sessions.configure, session_id, policy)
        else:
            meta = await calls.run(sessions.meta, session_id)
        return ok(
            {
                "session_id": meta.session_id,
                "auto_commit_policy": meta.model_dump(mode="json")["auto_commit_policy"],
                "memory_extraction_config": NO_EXTRACTION_CONFIG,
            }
        )

    @router.post("/{session_id}/messages")
    async def add_message(session_id: str, request: AddMessageRequest) -> JSONResponse:
        return ok(await writes.add(session_id, [request]))

    @router.post("/{session_id}/messages/batch")
    async def add_messages(session_id: str, request: AddMessagesBatchRequest) -> JSONResponse:
        return ok(await writes.add(session_id, request.messages))

    @router.post("/{session_id}/commit")
    async def commit(session_id: str, request: CommitRequest | None = NO_BODY) -> JSONResponse:
        keep = (request or CommitRequest()).keep_recent_count
        try:
            answer = await writes.commit(session_id, keep)
        except PoolFull as exc:
            return fail("RESOURCE_EXHAUSTED", str(exc), 429)
        return ok(answer.body)

    @router.post("/{session_id}/archives/{archive_id}/resubmit")
    async def resubmit(session_id: str, archive_id: str) -> JSONResponse:
        """Commit an archive again whose task failed or was interrupted (its memories unwritten)."""
        archive = await calls.run(sessions.archive_named, session_id, archive_id)
        running = [j.id for j in parts.tasks.unfinished() if j.label == task_label(archive)]
        if running:
            return fail("FAILED_PRECONDITION", f"{archive_id}: its task {running[0]} is still running", 409)
        try:
            parts.pool.check_room()
        except PoolFull as exc:
            return fail("RESOURCE_EXHAUSTED", str(exc), 429)
        task_id = parts.tasks.new_id()
        record = await calls.run(sessions.resubmit, archive, task_id)
        messages = await calls.run(sessions.messages, session_id, archive)
        commits.start(archive, messages, record.policy(), task_id)
        return ok(accepted_body(session_id, task_id, archive.uri))

    return router
