"""A real ``ovtui serve`` answers its routes without loading the MCP SDK; its first ``/mcp``
requests (several at once) load it, each answered by the real ``mcp`` client SDK; and the server
still stops cleanly, its MCP session manager with it; a request that comes as it stops is refused.
Whether the SDK was loaded is told by an audit hook in the server's process: the first import of
``mcp`` writes a marker file, with the stack that imported it."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import httpx2 as httpx
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from server_support import start_cli_server, stop
from workspace_support import build_sample_workspace

from ovtui.servers.openviking.app import create_session_app
from ovtui.wiring.workspace import Workspace

MARKER_ENV = "OVTUI_TEST_MCP_IMPORT_MARKER"
TIMEOUT_S = 60
FIRST_CLIENTS = 3

SERVE_WATCHING_IMPORTS = f"""
import os, sys, traceback
from pathlib import Path

marker = Path(os.environ[{MARKER_ENV!r}])

def on_import(event, args):
    if event == "import" and args[0] == "mcp" and not marker.exists():
        marker.write_text("".join(traceback.format_stack()))

sys.addaudithook(on_import)
from ovtui.cli.main import main
sys.exit(main())
"""


async def tools_of(url: str) -> list[str]:
    """The tools one fresh MCP client is listed over streamable HTTP."""
    async with (
        httpx.AsyncClient(timeout=TIMEOUT_S) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return sorted(tool.name for tool in (await session.list_tools()).tools)


async def first_clients(url: str) -> list[list[str]]:
    return await asyncio.gather(*(tools_of(url) for _ in range(FIRST_CLIENTS)))


def test_serve_loads_the_mcp_sdk_on_the_first_mcp_request_only(tmp_path: Path) -> None:
    root = build_sample_workspace(tmp_path / "ws")
    marker = tmp_path / "mcp-imported"
    proc, url = start_cli_server(
        [],
        argv=[sys.executable, "-c", SERVE_WATCHING_IMPORTS, "serve", str(root), "--port", "0"],
        env={MARKER_ENV: str(marker)},
    )
    try:
        with httpx.Client(base_url=url, timeout=TIMEOUT_S) as client:
            assert client.get("/health").status_code == 200
            added = client.post("/api/v1/sessions/s1/messages", json={"role": "user", "content": "hi"})
            assert added.status_code == 200, added.text
            found = client.post("/api/v1/search/find", json={"query": "cancel a booking"})
            assert found.status_code == 200, found.text
        assert not marker.exists(), marker.read_text()

        listed = asyncio.run(first_clients(url))
        assert len(listed) == FIRST_CLIENTS
        assert all("search_memories" in tools and "commit_session" in tools for tools in listed), listed
        assert len({tuple(tools) for tools in listed}) == 1
        assert "mcp_tools" in marker.read_text()  # the hook saw the SDK load, from the MCP server's module

        proc.terminate()  # the session manager started by the first request stops with the server
        _, err = proc.communicate(timeout=TIMEOUT_S)
        assert proc.returncode in (0, -signal.SIGTERM), err  # uvicorn re-raises the signal it handled
        assert "Traceback" not in err and "ERROR" not in err, err
    finally:
        stop(proc)


async def test_an_mcp_request_as_the_server_stops_is_refused_in_one_line(tmp_path: Path) -> None:
    app = create_session_app(Workspace(build_sample_workspace(tmp_path / "ws")), watch_inbox=False)
    async with app.router.lifespan_context(app):
        pass  # started and stopped: what a request still in the server's queue finds
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        answer = await client.post("/mcp", json={}, headers={"Accept": "application/json, text/event-stream"})
    assert answer.status_code == 503
    assert answer.json()["error"] == {
        "code": "UNAVAILABLE",
        "message": "the server is stopping: MCP is closed",
    }
