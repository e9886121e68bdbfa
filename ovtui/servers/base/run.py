"""Start a server: bind (port 0 = a free one), print the URL as the first line, serve until stopped.

The socket is bound and listening before the URL is printed, so a client that reads the first
line can connect at once (connections wait in the backlog until uvicorn accepts them).
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Callable
from typing import Any

import uvicorn

from ovtui.core.errors import OvtuiError
from ovtui.servers.base.request_log import LineWriter, RequestLog


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP explicitly: asyncio turns Nagle off (TCP_NODELAY) only on connections whose
    # socket says TCP; with proto 0 every keep-alive response waited ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(1024)
    except (OSError, OverflowError) as exc:  # a port in use or out of range: one line, no traceback
        sock.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OvtuiError(f"cannot listen on {host} port {port}: {reason}") from None
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


# On SIGTERM/SIGINT, open requests (long polls hold one up to 30 s) get this long to finish.
GRACEFUL_SHUTDOWN_S = 2


def make_server(app: Any) -> uvicorn.Server:
    config = uvicorn.Config(
        app,
        # httptools (C) parses and writes HTTP/1.1 at half the CPU of the pure-Python h11 per request;
        # named rather than left to "auto", so every install serves the same way.
        http="httptools",
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    return uvicorn.Server(config)


async def serve(app: Any, sock: socket.socket) -> None:
    await make_server(app).serve(sockets=[sock])


def run_server(
    app: Any,
    host: str,
    port: int,
    *,
    announce: Callable[[str], None] | None = None,
    log: LineWriter | None = None,
) -> None:
    """Blocking: serve ``app`` until SIGINT/SIGTERM (uvicorn shuts down gracefully); with ``log``,
    a line per request after the URL."""
    sock = bind_socket(host, port)
    url = url_of(sock)
    if announce is None:
        print(url, flush=True)
    else:
        announce(url)
    try:
        asyncio.run(serve(app if log is None else RequestLog(app, log), sock))
    finally:
        sock.close()
        sys.stdout.flush()
