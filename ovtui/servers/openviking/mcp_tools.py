"""The MCP server of a workspace, on the official ``mcp`` SDK: what an MCP client (a coding agent, a
chat app) needs to read the memories ovtui learned and to report its conversations, with one
config entry. ``ovtui mcp`` serves it over stdio; ``ovtui serve`` at ``/mcp`` (streamable HTTP).

Tools, with OpenViking's semantics through the same services as the HTTP routes:
``search_memories`` (``POST /api/v1/search/search``), ``read_memory`` (``GET /api/v1/content/read``),
``list_memories`` (``GET /api/v1/fs/ls``), ``add_messages`` (``POST …/messages/batch``: a missing
session is created) and ``commit_session`` (``POST …/commit``, answered when its memories are
written: the task's result, with its ``memory_diff_uri``). With a ``session_id``, the memories a
search or a read serves are recorded in the use ledger as used by that session (via ``mcp``), and
linked to its outcome when it is committed; a session id that names no session is refused, so no
use is recorded for a session that will never have an outcome. Every memory file is also a
resource (``viking://{+path}``), read without a session.

Names and URIs are checked as the HTTP routes check them (the one name rule for session ids, the
one path rule for URIs); a refusal is a tool error whose text starts with the argument it is about
(``uri: Access denied for … (PERMISSION_DENIED)``), or for a resource a JSON-RPC error.

The SDK is imported by this module only, which the servers import where they serve MCP, so
``ovtui --help`` and the kernel never load it. It logs through ``logging`` on stderr only: over
stdio, stdout is the wire.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS
from mcp.types import Resource as MCPResource
from pydantic import Field, ValidationError
from starlette.types import ASGIApp

from ovtui.core.about import ovtui_version
from ovtui.core.errors import OvtuiError
from ovtui.memory.retrieval.access import AccessError, Visibility
from ovtui.memory.retrieval.content import ListOptions
from ovtui.protocols.sessions import AddMessageRequest
from ovtui.servers.openviking.parts import ServerParts
from ovtui.servers.openviking.search import SearchRequest, find_query, found_result
from ovtui.servers.openviking.session_bodies import added_body, commit_body
from ovtui.servers.openviking.tasks import task_body
from ovtui.sessions.session_files import SessionError, check_session_id
from ovtui.storage.job_pool import PoolFull
from ovtui.wiring.services.sessions import NotCommitted

MEMORIES = "viking://~/memories"
MEMORY_TEMPLATE = "viking://{+path}"
MAX_LISTED_RESOURCES = 1000  # resources/list: the first this many memory files (list_memories pages)
COMMIT_POLL_S = 30.0  # how long one wait on a commit's task lasts before it looks again

INSTRUCTIONS = (
    "ovtui holds what an agent learned from its own conversations, as OpenViking memory files. "
    "Before answering, call search_memories with the request (and your session_id) and follow the "
    "experiences it returns; read_memory reads one in full. Report the conversation with "
    "add_messages and call commit_session when it ends: ovtui learns from it."
)

SessionId = Annotated[str, Field(description="the session (conversation) these calls belong to")]
OptionalSession = Annotated[
    str | None,
    Field(description="your session: what it is served is recorded as used by it (must exist)"),
]


URI_REFUSALS = frozenset({"INVALID_URI", "PERMISSION_DENIED", "NOT_FOUND"})


def refusal(exc: OvtuiError, argument: str) -> ToolError:
    """A refusal as one line starting with the argument it is about (``argument`` for what a URI
    names; an invalid argument's message names its own), with OpenViking's code."""
    if isinstance(exc, AccessError):
        about_a_uri = exc.code in URI_REFUSALS or "resource" in (exc.details or {})
        where = f"{argument}: " if about_a_uri else ""
        return ToolError(f"{where}{exc} ({exc.code})")
    if isinstance(exc, SessionError):
        return ToolError(f"session_id: {exc} ({exc.code})")
    return ToolError(f"{argument}: {exc}")


@contextmanager
def refusals(argument: str) -> Iterator[None]:
    try:
        yield
    except ValidationError as exc:  # a request model built from the arguments: its first field
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or argument
        raise ToolError(f"{where}: {first['msg']}") from None
    except OvtuiError as exc:
        raise refusal(exc, argument) from None


class MemoryServer(MCPServer[Any]):
    """The tools and the resource template, over one server's parts (see the module)."""

    def __init__(self, parts: ServerParts) -> None:
        super().__init__("ovtui", instructions=INSTRUCTIONS, version=ovtui_version(), log_level="WARNING")
        self.parts = parts
        self._register()

    async def list_resources(self) -> list[MCPResource]:
        """Every memory file the user sees (no peer's: a resource is read without a session)."""
        options = ListOptions(output="original", recursive=True, node_limit=MAX_LISTED_RESOURCES)
        try:
            entries, _ = await self.parts.workspace.agent.ls(MEMORIES, self._visibility(None), options)
        except AccessError as exc:
            if exc.code == "NOT_FOUND":  # a workspace that has learned nothing yet
                return []
            raise
        return [
            MCPResource(uri=e["uri"], name=e["name"], mime_type="text/markdown", size=e.get("size"))
            for e in entries
            if not e.get("isDir") and str(e["uri"]).endswith(".md")
        ]

    def _visibility(self, session_id: str | None) -> Visibility:
        return self.parts.workspace.agent.visibility(session_id, None)

    def _register(self) -> None:
        workspace, sessions = self.parts.workspace, self.parts.sessions

        @self.tool()
        async def search_memories(
            query: Annotated[str, Field(pattern=r"\S", description="what to find: the user's request")],
            session_id: OptionalSession = None,
            target_uri: Annotated[str, Field(description="a folder to search under; '' = all")] = "",
            memory_types: Annotated[
                list[str] | None, Field(description="only these memory types (experiences, …)")
            ] = None,
            limit: Annotated[int, Field(ge=1, le=100)] = 10,
            score_threshold: float | None = None,
            read_content: Annotated[bool, Field(description="each hit with its full text")] = False,
        ) -> dict[str, Any]:
            """The memories most relevant to a request, best first (OpenViking's search): each hit's
            uri, memory_type, abstract and score. With session_id, the session's recent user
            messages shape the ranking and the hits are recorded as used by it."""
            declared = workspace.reading.memory_types()
            unknown = sorted(set(memory_types or ()) - set(declared))
            if unknown:  # a filter no file can pass would answer nothing and say nothing
                raise ToolError(f"memory_types: unknown {unknown} (this workspace has {', '.join(declared)})")
            with refusals("target_uri"):
                session = await sessions.require(session_id)
                wanted = {"op": "must", "field": "memory_type", "conds": memory_types}
                request = SearchRequest(
                    query=query,
                    target_uri=target_uri,
                    limit=limit,
                    score_threshold=score_threshold,
                    filter=wanted if memory_types else None,
                )
                visibility = self._visibility(session)
                asked, any_memory = find_query(request, declared)
                found = (
                    await workspace.agent.search(asked, visibility, session, via="mcp") if any_memory else []
                )
                return await found_result(workspace, found, visibility, read_content=read_content)

        @self.tool()
        async def read_memory(
            uri: Annotated[str, Field(description="a viking:// URI from search_memories or list_memories")],
            session_id: OptionalSession = None,
            offset: Annotated[int, Field(ge=0, description="first line, 0-based")] = 0,
            limit: Annotated[int, Field(ge=-1, description="lines to read; -1: to the end")] = -1,
        ) -> str:
            """One memory file's text (OpenViking's content/read, without its MEMORY_FIELDS
            trailer); also a commit's memory_diff.json. With session_id, recorded as used by it."""
            with refusals("uri"):
                session = await sessions.require(session_id)
                return await workspace.agent.read(
                    uri, self._visibility(session), offset=offset, limit=limit, consumer=session, via="mcp"
                )

        @self.tool()
        async def list_memories(
            uri: Annotated[str, Field(description="a folder; default: the user's memories")] = MEMORIES,
            recursive: bool = False,
            session_id: OptionalSession = None,
            offset: Annotated[int, Field(ge=0)] = 0,
            limit: Annotated[int, Field(ge=1, le=1000)] = 200,
        ) -> dict[str, Any]:
            """A folder's entries (OpenViking's fs/ls, agent output: uri, isDir, size, abstract:
            a file's too, what it is about), and whether more follow (has_more: call again with
            offset)."""
            with refusals("uri"):
                session = await sessions.require(session_id)
                options = ListOptions(
                    recursive=recursive, node_limit=limit, offset=offset, file_abstracts=True
                )
                entries, more = await workspace.agent.ls(uri, self._visibility(session), options)
                return {"entries": entries, "has_more": more}

        @self.tool()
        async def add_messages(session_id: SessionId, messages: list[AddMessageRequest]) -> dict[str, Any]:
            """Add messages to a session (created by its first message): role user|assistant,
            content or parts (text, tool calls with their output)."""
            with refusals("session_id"):
                return added_body(await sessions.add(check_session_id(session_id), messages))

        @self.tool()
        async def commit_session(
            session_id: SessionId,
            keep_recent_count: Annotated[int, Field(ge=0, description="newest messages kept live")] = 0,
        ) -> dict[str, Any]:
            """Commit a session: ovtui archives it and learns from it (memories, experiences). The
            answer comes when that is done: the commit's task with its result (memory_diff_uri,
            memories_extracted); or status skipped with the reason."""
            with refusals("session_id"):
                try:
                    done = await sessions.commit(check_session_id(session_id), keep_recent_count)
                except PoolFull as exc:
                    raise ToolError(f"session_id: {exc}; try again shortly (RESOURCE_EXHAUSTED)") from None
                if isinstance(done, NotCommitted):
                    return commit_body(done)
                job = await sessions.tasks.finished(done.job, COMMIT_POLL_S)  # or cancelled by the server
                return {**commit_body(done), "task": task_body(job)}

        @self.resource(MEMORY_TEMPLATE, name="memory", mime_type="text/markdown")
        async def memory(path: str) -> str:
            """A memory file by its viking:// URI (without its MEMORY_FIELDS trailer)."""
            uri = f"viking://{path}"
            try:
                return await workspace.agent.read(uri, self._visibility(None))
            except AccessError as exc:
                if exc.code == "NOT_FOUND":
                    raise ResourceNotFoundError(f"uri: {exc}") from None
                raise MCPError(INVALID_PARAMS, f"uri: {exc} ({exc.code})", {"uri": uri}) from None
            except OvtuiError as exc:
                raise MCPError(INVALID_PARAMS, f"uri: {exc}", {"uri": uri}) from None


def streamable_http(server: MemoryServer, host: str) -> ASGIApp:
    """The ASGI endpoint serving ``server`` over streamable HTTP (the caller runs its session
    manager in its lifespan). Stateless: each request its own transport, no session to keep."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

    server.streamable_http_app(stateless_http=True, host=host.strip("[]"))  # makes session_manager
    return StreamableHTTPASGIApp(server.session_manager)
