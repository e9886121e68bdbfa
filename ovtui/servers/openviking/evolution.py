"""OpenViking's agent-evolution routes: the trajectories an experience fed, and how they went.

``GET /api/v1/agent-evolution/experiences/trajectories?experience_uri=&limit=&offset=&start_date=&end_date=``
lists them newest first, ``{experience_uri, items: [{uri, name, created_at, updated_at}], total,
limit, offset, has_more}``; ``GET …/experiences/outcomes?experience_uri=&start_date=&end_date=``
counts them, ``{experience_uri, outcome_distribution: [{outcome, count}]}`` with all five outcomes
in OpenViking's order. Both answer from the use ledger (``memory.ledger``): a result is fed to an
experience when a session or a rollout that used it is committed or graded. The outcomes of all
time count every result; a date range (UTC days, both ends included) and the trajectory listing
read the newest results the ledger keeps per memory (``LEDGER_FED_PER_MEMORY``).

Requests are checked as OpenViking checks them, with its messages: the experience URI must name a
file of the caller's experiences (the workspace's user; the home alias ``viking://~/`` expanded),
``limit`` 1..1000, ``offset`` ≥ 0, dates as ``YYYY-MM-DD`` with the start not after the end;
unknown query parameters are ignored. Errors are 400 INVALID_ARGUMENT, or 404 NOT_FOUND for a
file that is not there, in OpenViking's envelope with its ``details``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import PurePosixPath
from typing import Any, TypeVar

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ovtui.core.errors import UnsafePathError
from ovtui.memory.experience_uris import owned_experience_uri
from ovtui.memory.ledger_state import OUTCOMES, Fed
from ovtui.servers.openviking.parts import ServerParts
from ovtui.wiring.workspace import Workspace

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
NOT_OWNED = "experience_uri must identify an Experience owned by the current user"
NOT_A_FILE = "experience_uri must identify an Experience file"
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")

QueryT = TypeVar("QueryT", bound=BaseModel)


class OutcomesQuery(BaseModel):
    model_config = ConfigDict(extra="ignore")

    experience_uri: str
    start_date: str | None = None
    end_date: str | None = None


class TrajectoriesQuery(OutcomesQuery):
    limit: int = Field(DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    offset: int = Field(0, ge=0)


class Refused(Exception):
    """A request OpenViking refuses, answered as it answers it: an error it raises in the full
    envelope; a request that fails validation in the compact one (no result, telemetry or profile)."""

    def __init__(
        self, code: str, message: str, status: int, details: dict[str, Any], *, compact: bool = False
    ) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status
        self.details, self.compact = details, compact

    def response(self) -> JSONResponse:
        error = {"code": self.code, "message": self.message, "details": self.details}
        if self.compact:
            return JSONResponse({"status": "error", "error": error}, self.status)
        body = {"status": "error", "result": None, "error": error, "telemetry": None, "profile": None}
        return JSONResponse(body, self.status)


def invalid(message: str) -> Refused:
    return Refused("INVALID_ARGUMENT", message, 400, {})


def answer(result: Any) -> JSONResponse:
    """OpenViking's full success envelope (every field, the empty ones null)."""
    return JSONResponse({"status": "ok", "result": result, "error": None, "telemetry": None, "profile": None})


def parsed(model: type[QueryT], request: Request) -> QueryT:
    """The query parameters as ``model``; a bad one is OpenViking's validation error (400)."""
    try:
        return model.model_validate(dict(request.query_params))
    except ValidationError as exc:
        errors = [
            {"loc": ["query", *map(str, e["loc"])], "message": e["msg"], "type": e["type"]}
            for e in exc.errors()
        ]
        message = f"Invalid request parameters: {'.'.join(errors[0]['loc'])}: {errors[0]['message']}"
        raise Refused("INVALID_ARGUMENT", message, 400, {"validation_errors": errors}, compact=True) from None


def day(value: str | None, name: str) -> date | None:
    if value is None:
        return None
    if not _DAY.fullmatch(value):
        raise invalid(f"{name} must use YYYY-MM-DD format")
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise invalid(f"{name} must be a valid YYYY-MM-DD date") from None


def days(query: OutcomesQuery) -> tuple[date | None, date | None]:
    start, end = day(query.start_date, "start_date"), day(query.end_date, "end_date")
    if start is not None and end is not None and start > end:
        raise invalid("start_date must be on or before end_date")
    return start, end


def experience(workspace: Workspace, raw: str) -> str:
    """The experience file ``raw`` names, as OpenViking checks it (file work: in a thread)."""
    uri = owned_experience_uri(raw, workspace.config.workspace.user)
    if uri is None:
        raise invalid(NOT_OWNED)
    try:
        path = workspace.reading.path_for(uri)
    except UnsafePathError:
        raise invalid(NOT_OWNED) from None  # a link leading out of the workspace
    if path.is_dir():
        raise invalid(NOT_A_FILE)
    if not path.is_file():
        raise Refused("NOT_FOUND", f"File not found: {uri}", 404, {"type": "file", "resource": uri})
    return uri


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def within(fed: list[Fed], start: date | None, end: date | None) -> list[Fed]:
    if start is None and end is None:
        return fed
    chosen = []
    for result in fed:
        when = datetime.fromtimestamp(result.at, UTC).date()
        if (start is None or when >= start) and (end is None or when <= end):
            chosen.append(result)
    return chosen


def trajectories(workspace: Workspace, query: TrajectoriesQuery) -> dict[str, Any]:
    start, end = days(query)
    uri = experience(workspace, query.experience_uri)
    listed: dict[str, Fed] = {}
    for result in within(workspace.reading.memory_fed(uri), start, end):
        if result.trajectory is not None:
            listed.setdefault(result.trajectory, result)  # newest first: a trajectory's latest result
    page = list(listed.values())[query.offset : query.offset + query.limit]
    items = [
        {
            "uri": r.trajectory,
            "name": PurePosixPath(r.trajectory or "").stem,
            "created_at": stamp(r.at),
            "updated_at": stamp(r.at),
        }
        for r in page
    ]
    return {
        "experience_uri": uri,
        "items": items,
        "total": len(listed),
        "limit": query.limit,
        "offset": query.offset,
        "has_more": query.offset + len(items) < len(listed),
    }


def outcomes(workspace: Workspace, query: OutcomesQuery) -> dict[str, Any]:
    start, end = days(query)
    uri = experience(workspace, query.experience_uri)
    if start is None and end is None:
        usage = workspace.reading.memory_use(uri)
        counts = dict.fromkeys(OUTCOMES, 0) if usage is None else usage.histogram()
    else:
        counts = dict.fromkeys(OUTCOMES, 0)
        for result in within(workspace.reading.memory_fed(uri), start, end):
            counts[result.outcome] += 1
    return {
        "experience_uri": uri,
        "outcome_distribution": [{"outcome": name, "count": counts[name]} for name in OUTCOMES],
    }


async def serve(
    request: Request,
    workspace: Workspace,
    model: type[QueryT],
    reply: Callable[[Workspace, QueryT], dict[str, Any]],
) -> JSONResponse:
    """``reply`` to the request's query, read as ``model`` (file work: in a thread)."""
    try:
        query = parsed(model, request)
        return answer(await asyncio.to_thread(reply, workspace, query))
    except Refused as refused:
        return refused.response()


def evolution_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1/agent-evolution", tags=["agent-evolution"])
    workspace = parts.workspace

    @router.get("/experiences/trajectories")
    async def list_trajectories(request: Request) -> JSONResponse:
        return await serve(request, workspace, TrajectoriesQuery, trajectories)

    @router.get("/experiences/outcomes")
    async def outcome_distribution(request: Request) -> JSONResponse:
        return await serve(request, workspace, OutcomesQuery, outcomes)

    return router
