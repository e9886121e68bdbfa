"""``GET /api/v1/fs/ls|tree|stat?uri=``: a folder's entries, the tree below it, one entry, as
OpenViking answers them (listings with a top-level ``has_more``).

Every parameter OpenViking's SDK sends is accepted (its defaults: ``output=original``,
``abs_limit``, ``node_limit``, ``offset``, ``overview_limit``, booleans as ``true``/``false``).
Implemented: ``output`` (``agent``: no name or mode, abstracts; ``original``: the stat entry),
``simple`` (URIs only), ``recursive``, ``abs_limit``, ``include_abstract``, ``include_overview``,
``overview_limit``, ``show_all_hidden``, ``node_limit``/``limit``, ``offset``, ``sort_by``,
``sort_order``, and for tree ``level_limit`` and ``directories_only``. Accepted and ignored:
``extra_fields``, ``tags``, ``include_tags``. What the caller may not see is left out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import JSONResponse

from ovtui.memory.retrieval.content import ListOptions
from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.routing import ACTOR_PEER_HEADER, OpenVikingRoute, full, listing

Output = Literal["agent", "original"]
AGENT_OUTPUT = Query("agent")  # the server's default (OpenViking's SDK sends output=original)
REPEATED = Query(None)  # a parameter given any number of times (extra_fields=id&extra_fields=count)


@dataclass(frozen=True)
class Listed:
    """The parameters ``ls`` and ``tree`` share: where, what each entry shows, which page."""

    uri: str
    options: ListOptions
    extra_fields: list[str] | None
    actor_peer: str | None


def listed(
    uri: str = Query(...),
    output: Output = AGENT_OUTPUT,
    abs_limit: int = Query(256, ge=0),
    include_abstract: bool | None = Query(None),
    include_overview: bool | None = Query(None),
    overview_limit: int = Query(4000, ge=1),
    show_all_hidden: bool = Query(False),
    node_limit: int = Query(1000, ge=1),
    offset: int = Query(0, ge=0),
    limit: int | None = Query(None, ge=1),
    extra_fields: list[str] | None = REPEATED,
    tags: list[str] | None = REPEATED,
    include_tags: bool = Query(False),
    actor_peer: str | None = Header(None, alias=ACTOR_PEER_HEADER),
) -> Listed:
    options = ListOptions(
        output=output,
        abs_limit=abs_limit,
        include_abstract=include_abstract,
        include_overview=bool(include_overview),
        overview_limit=overview_limit,
        show_all_hidden=show_all_hidden,
        node_limit=limit or node_limit,
        offset=offset,
    )
    return Listed(uri, options, extra_fields, actor_peer)


LISTED = Depends(listed)


def fs_router(parts: ServerParts) -> APIRouter:
    router = APIRouter(prefix="/api/v1/fs", tags=["fs"], route_class=OpenVikingRoute)
    workspace = parts.workspace

    async def answer(asked: Listed, options: ListOptions) -> JSONResponse:
        visibility = workspace.agent.visibility(None, asked.actor_peer)
        entries, more = await workspace.agent.ls(asked.uri, visibility, options)
        return listing(entries, more)

    @router.get("/ls")
    async def ls(
        asked: Listed = LISTED,
        simple: bool = Query(False),
        recursive: bool = Query(False),
        sort_by: Literal["name", "mtime"] | None = Query(None),
        sort_order: Literal["asc", "desc"] = Query("asc"),
    ) -> JSONResponse:
        options = replace(
            asked.options,
            recursive=recursive,
            simple=simple and not asked.extra_fields,
            sort_by=sort_by,
            sort_order=sort_order,
        )
        return await answer(asked, options)

    @router.get("/tree")
    async def tree(
        asked: Listed = LISTED,
        directories_only: bool = Query(False),
        level_limit: int = Query(3, ge=1),
    ) -> JSONResponse:
        options = replace(
            asked.options, recursive=True, level_limit=level_limit, directories_only=directories_only
        )
        return await answer(asked, options)

    @router.get("/stat")
    async def stat(
        uri: str = Query(...), actor_peer: str | None = Header(None, alias=ACTOR_PEER_HEADER)
    ) -> JSONResponse:
        return full(await workspace.agent.stat(uri, workspace.agent.visibility(None, actor_peer)))

    return router
