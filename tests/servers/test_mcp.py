"""The MCP tools and resources through the real ``mcp`` client SDK: over stdio against a real
``ovtui mcp`` subprocess, and over streamable HTTP against a real ``ovtui serve`` subprocess on
127.0.0.1 (with and without a key). Each tool's result; refusals of hostile URIs and unknown
sessions as MCP errors naming the argument; the uses a session's searches and reads record in
the ledger (via ``mcp``), linked to its outcome once it is committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, InitializeResult, TextContent, TextResourceContents
from retrieval_support import SECRET, ledger_uses, trained_sample, with_a_link_out
from server_support import start_cli_server, stop

from ovtui.memory.ledger_state import Use
from ovtui.wiring.workspace import Workspace

HOME = "viking://user/default"
CANCEL_REQUEST = "Customer C7642 here - booking B53N8D has to be cancelled, please."
CANCELLATION = f"{HOME}/memories/experiences/booking_cancellation.md"
TOOLS = ["add_messages", "commit_session", "list_memories", "read_memory", "search_memories"]
TIMEOUT_S = 60


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return with_a_link_out(trained_sample(tmp_path_factory.mktemp("mcp") / "ws"))


@asynccontextmanager
async def over_stdio(root: Path) -> AsyncIterator[ClientSession]:
    # The SDK passes the server only a minimal environment: the venv's interpreter and PATH suffice.
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ovtui", "mcp", str(root)], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        introduced(await session.initialize())
        yield session


@asynccontextmanager
async def over_http(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[ClientSession]:
    async with (
        httpx.AsyncClient(headers=headers, timeout=TIMEOUT_S) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        introduced(await session.initialize())
        yield session


def introduced(init: InitializeResult) -> None:
    """The server names itself with ovtui's own version (OpenViking's gives its mcp library's)."""
    assert init.server_info.name == "ovtui"
    assert init.server_info.version == version("ovtui") != ""


async def call(session: ClientSession, tool: str, **arguments: Any) -> CallToolResult:
    return await session.call_tool(tool, arguments, read_timeout_seconds=TIMEOUT_S)


async def result_of(session: ClientSession, tool: str, **arguments: Any) -> Any:
    answer = await call(session, tool, **arguments)
    assert not answer.is_error, answer.content
    assert answer.structured_content is not None
    return answer.structured_content.get("result", answer.structured_content)


async def refusal_of(session: ClientSession, tool: str, **arguments: Any) -> str:
    answer = await call(session, tool, **arguments)
    assert answer.is_error, answer.structured_content
    first = answer.content[0]
    assert isinstance(first, TextContent)
    prefix = f"Error executing tool {tool}: "  # the SDK's; what follows is ovtui's line
    assert first.text.startswith(prefix), first.text
    return first.text.removeprefix(prefix)


def mcp_uses(root: Path, session_id: str) -> list[Use]:
    return ledger_uses(root, session_id, "mcp")


async def check_tools(session: ClientSession, root: Path, session_id: str) -> None:
    """Every tool's answer, the refusals, the uses recorded and the outcome linked on commit."""
    listed = await session.list_tools()
    assert sorted(t.name for t in listed.tools) == TOOLS
    found = await result_of(session, "search_memories", query=CANCEL_REQUEST)
    assert list(found) == ["memories", "resources", "skills", "total"]
    assert found["total"] == len(found["memories"]) > 0
    assert "booking_cancellation" in found["memories"][0]["uri"]
    assert {"uri", "memory_type", "abstract", "score"} <= set(found["memories"][0])
    assert mcp_uses(root, session_id) == []  # no session yet: nothing served to anyone

    unknown = await refusal_of(session, "search_memories", query=CANCEL_REQUEST, session_id=session_id)
    assert unknown.startswith(f"session_id: session {session_id!r} not found (NOT_FOUND)"), unknown
    added = await result_of(
        session,
        "add_messages",
        session_id=session_id,
        messages=[{"role": "user", "content": CANCEL_REQUEST}],
    )
    assert added["session_id"] == session_id and added["added"] == 1 and added["message_count"] == 1

    served = await result_of(
        session,
        "search_memories",
        query=CANCEL_REQUEST,
        session_id=session_id,
        memory_types=["experiences"],
        limit=3,
    )
    hits = [h["uri"] for h in served["memories"]]
    assert hits and hits[0] == CANCELLATION and len(hits) <= 3
    assert all(h["memory_type"] == "experiences" for h in served["memories"])
    text = await result_of(session, "read_memory", uri=CANCELLATION, session_id=session_id)
    assert text.startswith("## Situation") and "MEMORY_FIELDS" not in text
    first_lines = await result_of(session, "read_memory", uri=CANCELLATION, limit=1)
    assert first_lines == "## Situation\n"
    uses = mcp_uses(root, session_id)
    assert sorted(u.uri for u in uses) == sorted([*hits, CANCELLATION])
    assert all(u.version is not None for u in uses)  # an experience's version, for Review

    listing = await result_of(session, "list_memories")
    assert f"{HOME}/memories/experiences" in [e["uri"] for e in listing["entries"]]
    assert listing["has_more"] is False
    page = await result_of(session, "list_memories", uri=f"{HOME}/memories/experiences", limit=2)
    assert len(page["entries"]) == 2 and page["has_more"] is True
    assert all(e["uri"].startswith(f"{HOME}/memories/experiences/") for e in page["entries"])
    cancellation = await result_of(session, "list_memories", uri=f"{HOME}/memories/experiences", limit=200)
    abstracts = {e["uri"]: e["abstract"] for e in cancellation["entries"]}
    assert all(abstracts.values()), abstracts  # each file says what it is about
    assert "cancel" in abstracts[CANCELLATION].lower(), abstracts[CANCELLATION]
    unknown_type = await refusal_of(
        session, "search_memories", query=CANCEL_REQUEST, memory_types=["skills", "x"]
    )
    assert unknown_type.startswith("memory_types: unknown ['skills', 'x'] (this workspace has experiences"), (
        unknown_type
    )

    for uri, reason in [
        (f"{HOME}/memories/../../ovtui.toml", "(INVALID_URI)"),
        ("viking://user/mallory/memories/secret.md", "(PERMISSION_DENIED)"),
        (f"{HOME}/memories/experiences/escape.md", ""),
        (f"{HOME}/memories/experiences/no_such.md", "(NOT_FOUND)"),
        ("file:///etc/passwd", "(INVALID_URI)"),
    ]:
        refused = await refusal_of(session, "read_memory", uri=uri, session_id=session_id)
        assert refused.startswith("uri: ") and refused.endswith(reason) and SECRET not in refused, refused
    hostile_session = await refusal_of(session, "read_memory", uri=CANCELLATION, session_id="../x")
    assert hostile_session.startswith("session_id: "), hostile_session
    denied = await refusal_of(session, "list_memories", uri="viking://user/mallory/memories")
    assert denied.startswith("uri: ") and "PERMISSION_DENIED" in denied
    bad_limit = await refusal_of(session, "search_memories", query="q", limit=0)
    assert "limit" in bad_limit
    assert "query" in await refusal_of(session, "search_memories", query="   ")
    folder = await refusal_of(session, "read_memory", uri=f"{HOME}/memories/experiences")
    assert folder.startswith("uri: Directory URI is not readable as a file") and "INVALID_ARGUMENT" in folder
    bad_role = await refusal_of(session, "add_messages", session_id=session_id, messages=[{"role": "robot"}])
    assert "messages.0" in bad_role, bad_role
    assert sorted(u.uri for u in mcp_uses(root, session_id)) == sorted([*hits, CANCELLATION])  # no more

    resources = (await session.list_resources()).resources
    assert CANCELLATION in [str(r.uri) for r in resources]
    assert all(r.mime_type == "text/markdown" for r in resources)
    templates = (await session.list_resource_templates()).resource_templates
    assert [t.uri_template for t in templates] == ["viking://{+path}"]
    contents = (await session.read_resource(CANCELLATION)).contents
    assert isinstance(contents[0], TextResourceContents) and contents[0].text == text
    for hostile in ["viking://user/mallory/memories/x.md", f"{HOME}/memories/experiences/escape.md"]:
        with pytest.raises(MCPError) as error:
            await session.read_resource(hostile)
        assert error.value.error.code == -32602 and error.value.error.message.startswith("uri: ")
        assert SECRET not in error.value.error.message

    committed = await result_of(session, "commit_session", session_id=session_id)
    assert committed["status"] == "accepted" and committed["archived"] is True
    task = committed["task"]
    assert task["status"] == "completed", task
    diff_uri = task["result"]["memory_diff_uri"]
    assert diff_uri == f"{committed['archive_uri']}/memory_diff.json"
    diff = json.loads(await result_of(session, "read_memory", uri=diff_uri))
    assert diff["archive_uri"] == committed["archive_uri"]
    again = await result_of(session, "commit_session", session_id=session_id)
    assert again["status"] == "skipped" and again["reason"] == "no_messages"
    never = await refusal_of(session, "commit_session", session_id="never-created")
    assert never.startswith("session_id: ") and "NOT_FOUND" in never

    usage = Workspace(root).reading.memory_use(CANCELLATION)
    assert usage is not None and usage.sessions >= 1
    assert sum(usage.outcomes) >= 1  # the commit's outcome is linked to what the session used


async def test_the_tools_over_stdio(workspace: Path) -> None:
    async with over_stdio(workspace) as session:
        assert (await session.list_tools()).tools  # the server answered before anything else
        await check_tools(session, workspace, "mcp-stdio")


async def test_the_tools_over_streamable_http_on_ovtui_serve(workspace: Path) -> None:
    proc, url = start_cli_server(["serve", str(workspace), "--port", "0"])
    try:
        async with over_http(url) as session:
            await check_tools(session, workspace, "mcp-http")
        # The commit ran as a task of the server: the session API reports the same task.
        tasks = httpx.get(f"{url}/api/v1/tasks", timeout=TIMEOUT_S).json()["result"]
        assert any(t["resource_id"] == "mcp-http" and t["status"] == "completed" for t in tasks)
        wrong_host = httpx.post(f"{url}/mcp", headers={"Host": "evil.example"}, json={}, timeout=TIMEOUT_S)
        assert wrong_host.status_code == 421  # DNS rebinding: a loopback server answers loopback names
    finally:
        stop(proc)


async def test_mcp_on_serve_takes_the_same_key(workspace: Path) -> None:
    proc, url = start_cli_server(
        ["serve", str(workspace), "--port", "0", "--api-key-env", "OVTUI_TEST_KEY"],
        env={"OVTUI_TEST_KEY": "k-123"},
    )
    try:
        refused = httpx.post(f"{url}/mcp", json={}, timeout=TIMEOUT_S)
        assert refused.status_code == 401 and refused.json()["error"]["code"] == "UNAUTHENTICATED"
        async with over_http(url, {"X-API-Key": "k-123"}) as session:
            found = await result_of(session, "search_memories", query=CANCEL_REQUEST)
            assert found["memories"][0]["uri"].startswith(f"{HOME}/memories/")
    finally:
        stop(proc)


def test_a_folder_that_is_no_workspace_is_one_line_on_stderr_and_nothing_on_the_wire(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ovtui", "mcp", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"ovtui: error: {tmp_path} is not an ovtui workspace (no ovtui.toml and no memories/): "
        f"create one with `ovtui init {tmp_path}`"
    ]
