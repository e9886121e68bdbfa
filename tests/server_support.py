"""A real uvicorn server on 127.0.0.1 in a thread of the test process (for the server base tests)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ovtui.server.run import bind_socket, make_server, url_of


@contextmanager
def threaded_server(app: Any) -> Iterator[str]:
    """Serve ``app`` on a free loopback port; yields the base URL. The socket listens before the
    URL is handed out, so requests made at once wait in the backlog instead of failing."""
    sock = bind_socket("127.0.0.1", 0)
    server = make_server(app)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[sock])), daemon=True)
    thread.start()
    try:
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
