"""A server's log on its output: one line per request (and what a server adds, such as a finished
commit), for the person who started it. ``--quiet`` turns it off.

The lines are written by a thread from a bounded queue, never by the event loop: an output nobody
reads (a pipe whose reader only wanted the URL) fills up and blocks its writer, and a server must
not stop answering for that. Lines that do not fit in the queue are dropped and counted, and the
count is written once there is room again. Only the method, the path (never the query, which may
carry a memory's URI or a search) and the outcome are written: no header, no key, no body.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import TextIO

from starlette.types import ASGIApp, Message, Receive, Scope, Send

QUEUED_LINES = 1000


def stamp() -> str:
    """The time of day a line is written at (local), as the app's run log writes it."""
    return time.strftime("%H:%M:%S")


class LineWriter:
    """Writes lines to ``stream`` from its own thread; ``write`` never blocks."""

    def __init__(self, stream: TextIO, capacity: int = QUEUED_LINES) -> None:
        self.stream = stream
        self._lines: queue.Queue[str] = queue.Queue(capacity)
        self._dropped = 0
        self._lock = threading.Lock()
        threading.Thread(target=self._run, name="ovtui-server-log", daemon=True).start()

    def write(self, line: str) -> None:
        try:
            self._lines.put_nowait(f"{stamp()} {line}")
        except queue.Full:
            with self._lock:
                self._dropped += 1

    def _run(self) -> None:
        while True:
            line = self._lines.get()
            with self._lock:
                dropped, self._dropped = self._dropped, 0
            try:
                if dropped:
                    self.stream.write(f"{stamp()} … {dropped} line(s) not written: nobody read the output\n")
                self.stream.write(line + "\n")
                self.stream.flush()
            except (OSError, ValueError):  # the output is gone (closed): the server goes on without it
                return


class RequestLog:
    """Pure ASGI middleware: ``METHOD /path STATUS N ms`` per HTTP request, once it is answered."""

    def __init__(self, app: ASGIApp, writer: LineWriter) -> None:
        self.app = app
        self.writer = writer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status: int | None = None

        async def noted_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, noted_send)
        finally:
            took = (time.perf_counter() - started) * 1000
            outcome = str(status) if status is not None else "no answer (the client left or the route failed)"
            self.writer.write(f"{scope['method']} {scope['path']} {outcome} {took:.0f} ms")
