"""Task routes: a commit's background task, polled by id or listed, in OpenViking's task shape
(``stage``, ``processing_seconds``, ``created_at_iso``…). The list filters by any of OpenViking's
statuses; ovtui's tasks are never cancelled, so ``cancelling`` and ``cancelled`` (and a status no
task has) list nothing, as OpenViking answers a status it does not know."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from ovtui.servers.openviking.envelope import CheckedRoute, fail, ok
from ovtui.servers.openviking.parts import ServerParts
from ovtui.sessions.overview import TASK_STATUS
from ovtui.storage.jobs import Job, JobStatus

TASK_TYPE = "session_commit"  # OpenViking's name of a commit's task


def iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat()


def task_body(job: Job) -> dict[str, Any]:
    session_id, _, archive = job.label.partition(":")
    return {
        "task_id": job.id,
        "task_type": TASK_TYPE,
        "status": TASK_STATUS[job.status],
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "processing_seconds": job.processing_seconds,
        "resource_id": session_id,
        "meta": {},
        # None while queued, as OpenViking's; its final status once finished.
        "stage": None if job.status == JobStatus.QUEUED else TASK_STATUS[job.status],
        "result": job.result,
        "error": job.error,
        "created_at_iso": iso(job.created_at),
        "updated_at_iso": iso(job.updated_at),
        "archive": archive,
    }


def tasks_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1/tasks", tags=["tasks"], route_class=CheckedRoute)
    tasks = parts.sessions.tasks

    @router.get("/{task_id}")
    async def get_task(task_id: str, wait: float = Query(0.0, ge=0.0, le=30.0)) -> JSONResponse:
        job = await tasks.get(task_id, wait)
        if job is None:
            return fail("NOT_FOUND", f"task {task_id!r} not found", 404)
        return ok(task_body(job))

    @router.get("")
    async def list_tasks(
        task_type: str | None = Query(None),
        status: str | None = Query(None),
        resource_id: str | None = Query(None),
        limit: int = Query(50, ge=1, le=1000),
    ) -> JSONResponse:
        bodies = [task_body(j) for j in tasks.listed()]
        if task_type is not None:
            bodies = [b for b in bodies if b["task_type"] == task_type]
        if status is not None:
            bodies = [b for b in bodies if b["status"] == status]
        if resource_id is not None:
            bodies = [b for b in bodies if b["resource_id"] == resource_id]
        bodies.sort(key=lambda b: b["created_at"], reverse=True)
        return ok(bodies[:limit])

    return router
