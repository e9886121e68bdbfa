"""``POST /api/v1/search/find`` and ``POST /api/v1/search/search``: the memories most relevant to a
query, as OpenViking answers them (``memories``, ``resources``, ``skills``, ``total``; each hit its
``context_type``, ``uri``, ``level``, ``score``, ``abstract``, ``tags`` — ``memory_type=<type>``,
as OpenViking tags a memory file —, ``category`` (the memory type, OpenViking's memory category)
plus ovtui's ``memory_type``).

Every field OpenViking's request models hold is accepted, and an unknown one refused (400) as
OpenViking refuses it. Implemented: ``query``, ``target_uri`` (one or a list), ``context_type``,
``limit``/``node_limit``, ``score_threshold``, ``filter`` (``and`` of ``must``/``must_not`` on
``memory_type``, ``status``, ``peer_id``, ``context_type``, and ``must``/``prefix`` on ``uri``),
``read_content``, and for search ``session_id`` (its recent user messages reorder the hits, which
are recorded as served to it) and ``search_type`` (``keywords``: lexical only). Accepted and
ignored: ``image_url``, ``tags``, ``since``/``until``/``time_field``, ``include_provenance``,
``telemetry``, ``events_time_decay_protection``; ``level`` keeps files (2) only. ovtui holds
memories only, so ``resources`` and ``skills`` are always empty.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Literal

from fastapi import APIRouter, Header
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from ovtui.core.domain import PolicyStatus
from ovtui.memory.retrieval.access import Visibility, invalid_argument
from ovtui.memory.retrieval.service import FindQuery, Found
from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.routing import ACTOR_PEER_HEADER, OpenVikingRoute, compact, stage
from ovtui.sessions.session_files import check_session_id
from ovtui.wiring.workspace import Workspace

MAX_HITS = 1000
CONTEXT_TYPES = ("memory", "resource", "skill")
CONTEXT_MODE_FIELDS = (
    "query_expansion",
    "max_tokens",
    "quotas",
    "purpose",
    "detail",
    "dedup_turns",
    "exclude_uris",
    "peer_scope",
    "other_peer_penalty",
    "rewrite",
    "rewrite_max_bullets",
)
STATUSES = frozenset({*(s.value for s in PolicyStatus), ""})


class FindRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = ""
    image_url: str | list[str] | None = None
    target_uri: str | list[str] = ""
    context_type: str | list[str] | None = None
    limit: int = Field(10, ge=1)
    node_limit: int | None = Field(None, ge=1)
    score_threshold: float | None = None
    filter: dict[str, Any] | None = None
    include_provenance: bool = False
    tags: list[str] | None = None
    since: str | None = None
    until: str | None = None
    time_field: Literal["updated_at", "created_at"] | None = None
    level: int | str | list[int] | None = None
    read_content: bool = False
    telemetry: bool | dict[str, Any] = False
    events_time_decay_protection: str | None = None


class SearchRequest(FindRequest):
    session_id: str | None = None
    search_type: Literal["semantic", "keywords"] = "semantic"
    mode: Literal["list", "context"] = "list"
    query_expansion: Any = None
    max_tokens: int | None = Field(None, ge=64, le=32_000)
    quotas: Any = None
    purpose: Any = None
    detail: Any = None
    dedup_turns: int | None = Field(None, ge=0, le=100)
    exclude_uris: list[str] | None = Field(None, max_length=200)
    peer_scope: Any = None
    other_peer_penalty: Any = None
    rewrite: Any = None
    rewrite_max_bullets: Any = None


def _names(value: str | list[str] | None) -> list[str]:
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else value
    return [item.strip().lower() for item in items if item.strip()]


def _levels(value: int | str | list[int] | None) -> set[int] | None:
    if value is None:
        return None
    items = value if isinstance(value, list) else [int(v) for v in str(value).split(",") if v.strip()]
    return {int(v) for v in items}


class _Filter:
    """OpenViking's filter tree, as far as ovtui's memories have the fields it names."""

    def __init__(self, declared: list[str]) -> None:
        self.declared = frozenset(declared)
        self.memory_types: frozenset[str] | None = None
        self.statuses: frozenset[str] | None = None
        self.peers: frozenset[str] | None = None
        self.context_types: frozenset[str] | None = None
        self.prefixes: list[str] = []

    def _narrow(self, current: frozenset[str] | None, values: frozenset[str]) -> frozenset[str]:
        return values if current is None else current & values

    def add(self, node: Any) -> None:
        if not isinstance(node, dict):
            raise invalid_argument("filter: each condition must be an object with 'op'")
        op, field = node.get("op"), node.get("field")
        conds = node.get("conds") or []
        if op == "and":
            for child in conds:
                self.add(child)
            return
        if not isinstance(conds, list) or not all(isinstance(c, str) for c in conds):
            raise invalid_argument(f"filter: 'conds' of {op!r} on {field!r} must be a list of strings")
        values = frozenset(conds)
        if op == "must" and field == "memory_type":
            self.memory_types = self._narrow(self.memory_types, values)
        elif op == "must_not" and field == "memory_type":
            self.memory_types = self._narrow(self.memory_types, self.declared - values)
        elif op == "must" and field == "status":
            self.statuses = self._narrow(self.statuses, values)
        elif op == "must_not" and field == "status":
            self.statuses = self._narrow(self.statuses, STATUSES - values)
        elif op == "must" and field == "peer_id":
            self.peers = self._narrow(self.peers, values)
        elif op == "must" and field == "context_type":
            self.context_types = self._narrow(self.context_types, frozenset(v.lower() for v in values))
        elif op in ("must", "prefix") and field == "uri":
            self.prefixes += conds
        else:
            raise invalid_argument(
                f"filter: {op!r} on {field!r} is not supported by ovtui (supported: and; must/must_not on "
                "memory_type, status; must on peer_id, context_type; must/prefix on uri)",
                {"filter": node},
            )


def find_query(request: FindRequest, declared: list[str]) -> tuple[FindQuery, bool]:
    """The query a request asks for, and whether it can have memory hits at all."""
    if not request.query.strip() and request.filter is None:
        raise invalid_argument("Search query or image_url must not be empty unless a filter is provided.")
    wanted = _Filter(declared)
    if request.filter is not None:
        wanted.add(request.filter)
    types = set(_names(request.context_type) or CONTEXT_TYPES)
    unknown = types - set(CONTEXT_TYPES)
    if unknown:
        raise invalid_argument(f"context_type: unknown {sorted(unknown)} (memory, resource, skill)")
    if wanted.context_types is not None:
        types &= wanted.context_types
    levels = _levels(request.level)
    targets = [
        t for t in ([request.target_uri] if isinstance(request.target_uri, str) else request.target_uri)
    ]
    targets = [t for t in targets if t not in ("", "/", "viking://")]
    query = FindQuery(
        text=request.query,
        limit=min(request.node_limit or request.limit, MAX_HITS),
        targets=tuple(targets + wanted.prefixes),
        memory_types=wanted.memory_types,
        peers=wanted.peers,
        statuses=wanted.statuses,
        threshold=request.score_threshold,
    )
    return query, "memory" in types and (levels is None or 2 in levels)


def hit(found: Found, content: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "context_type": "memory",
        "uri": found.doc.uri,
        "level": 2,
        "score": found.score,
        "abstract": found.abstract,
        # OpenViking tags each memory file's record with its type (a directory's with nothing)
        "tags": [f"memory_type={found.doc.memory_type}"],
        "category": found.doc.memory_type,  # OpenViking's: the memory category (its folder)
        "memory_type": found.doc.memory_type,
    }
    if content is not None:
        body["content"] = content
    return body


async def found_result(
    workspace: Workspace, found: list[Found], visibility: Visibility, *, read_content: bool
) -> dict[str, Any]:
    """OpenViking's find result of these hits (``read_content``: each with its text)."""
    contents = [await workspace.agent.read(f.doc.uri, visibility) if read_content else None for f in found]
    memories = [hit(f, c) for f, c in zip(found, contents, strict=True)]
    return {"memories": memories, "resources": [], "skills": [], "total": len(memories)}


def search_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1/search", tags=["search"], route_class=OpenVikingRoute)
    workspace = parts.workspace

    async def answer(found: list[Found], request: FindRequest, visibility: Visibility) -> JSONResponse:
        return compact(await found_result(workspace, found, visibility, read_content=request.read_content))

    @router.post("/find")
    async def find(
        request: FindRequest, actor_peer: str | None = Header(None, alias=ACTOR_PEER_HEADER)
    ) -> JSONResponse:
        visibility = workspace.agent.visibility(None, actor_peer)
        query, any_memory = find_query(request, workspace.reading.memory_types())
        with stage("find"):
            found = await workspace.agent.find(query, visibility) if any_memory else []
        return await answer(found, request, visibility)

    @router.post("/search")
    async def search(
        request: SearchRequest, actor_peer: str | None = Header(None, alias=ACTOR_PEER_HEADER)
    ) -> JSONResponse:
        if request.mode == "context":
            raise invalid_argument(
                "mode='context' (context assembly) is not supported by ovtui; use mode='list'"
            )
        given = [name for name in CONTEXT_MODE_FIELDS if getattr(request, name) is not None]
        if given:
            raise invalid_argument(
                f"{', '.join(given)} require mode='context'; ovtui answers mode='list' only"
            )
        if not request.query.strip():
            raise invalid_argument("Search query or image_url must not be empty.")
        session_id = check_session_id(request.session_id) if request.session_id else None
        visibility = workspace.agent.visibility(session_id, actor_peer)
        query, any_memory = find_query(request, workspace.reading.memory_types())
        if not any_memory:
            return await answer([], request, visibility)
        lexical = request.search_type == "keywords"
        with stage("find"):
            found = await workspace.agent.search(replace(query, dense=not lexical), visibility, session_id)
        return await answer(found, request, visibility)

    return router
