"""One request to a benchmark service, as the remote client makes it: retried, bounded in time and
in size, and its answer validated into the wire model it must be.

A service is someone else's program: it may answer a 200 that is not JSON or not the shape asked
for, drip its body a byte at a time, or send a body without end. Each of these becomes a
``RemoteError`` in one line naming the service, the route and what was wrong (the field, the limit,
the time), which the executor turns into one failed case and the case loader into one error.

- Time: a deadline holds the whole request: connecting, sending and the status may take the
  deadline plus any wait the request asks the service to hold its answer for (a long poll); the
  body, once the status is here, the deadline again. httpx's own timeouts bound each read, so a
  body dripped faster than them but without end would never end.
- Size: the body is streamed and refused once it passes the bound (a Content-Length above it is
  refused before reading), so a huge answer costs at most the bound in memory.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

import httpx2 as httpx
from pydantic import BaseModel, ValidationError

from ovtui.core.bounded_json import parse_json
from ovtui.core.bounds import MAX_ERROR_DETAIL_BYTES, MAX_SERVICE_ANSWER_BYTES
from ovtui.core.errors import OvtuiError, first_problem
from ovtui.core.retry import RetryPolicy

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
DETAIL_CHARS = 300  # of a service's error text, as a failed case's reason shows it

# A service's waits are short and regular: it is usually on this machine or the next, and a poll
# loop already spreads the requests.
SERVICE_RETRY = RetryPolicy(base_delay=0.05, max_delay=2.0, max_retry_after=30.0, jitter=False)
SERVICE_ATTEMPTS = 8  # tries of one request (transport errors, 408, 429, 5xx)
REQUEST_TIMEOUT = 60.0  # seconds one request may take, its answer read whole (beyond a long poll)

Model = TypeVar("Model", bound=BaseModel)


class RemoteError(OvtuiError):
    """A service that did not give a usable answer after the retries."""


def one_line(text: str, limit: int = DETAIL_CHARS) -> str:
    """``text`` on one line (runs of whitespace as one space), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else f"{flat[:limit]}…"


@dataclass(frozen=True, slots=True)
class Reply:
    """A service's answer, read whole within the bounds: its status, headers and body."""

    status_code: int
    headers: httpx.Headers
    body: bytearray  # kept as read: a copy would double the memory of a big answer

    def detail(self) -> str:
        """The reason an error answer gives: its JSON ``detail``, else its text, on one line."""
        text = self.body.decode("utf-8", "replace")
        try:
            parsed = parse_json(text, source="the answer")
        except ValueError:
            return one_line(text)
        if isinstance(parsed, dict) and "detail" in parsed:
            return one_line(str(parsed["detail"]))
        return one_line(str(parsed))

    def retry_after(self) -> float | None:
        """The wait its Retry-After asks for (seconds or an HTTP date; none in the past), or None."""
        value = self.headers.get("retry-after", "").strip()
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def parse(model: type[Model], reply: Reply, where: str, what: str) -> Model:
    """The answer's body as ``model``, or a RemoteError naming ``where`` (service and route) and the
    first field that is wrong (``what``: what the answer should have been)."""
    try:
        return model.model_validate_json(reply.body)
    except ValidationError as exc:
        raise RemoteError(f"{where}: the answer is not {what}: {first_problem(exc, 'answer')}") from None


# Told of each failed try before the next: (url, attempt, attempts, reason). A run shows it, so the
# seconds spent retrying a service that is not up yet read as "connecting", not as a stalled run.
RetryListener = Callable[[str, int, int, str], None]


@dataclass
class Service:
    """One service URL with its connection pool and what it already holds."""

    url: str
    client: httpx.AsyncClient = field(init=False)
    retry: RetryPolicy = SERVICE_RETRY
    attempts: int = SERVICE_ATTEMPTS
    deadline: float = REQUEST_TIMEOUT
    max_body: int = MAX_SERVICE_ANSWER_BYTES
    in_flight: int = 0
    known_snapshots: set[str] = field(default_factory=set)
    on_retry: RetryListener | None = None
    snapshot_locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def request(self, method: str, path: str, *, hold: float = 0.0, **kwargs: Any) -> Reply:
        """The final answer after retrying transport errors and retryable statuses. ``hold``: the
        seconds the request asks the service to keep its answer (a long poll), added to the time
        the status may take to come."""
        last = ""
        for attempt in range(1, self.attempts + 1):
            try:
                reply = await self._once(method, path, hold, **kwargs)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                self._retrying(attempt, last)
                await asyncio.sleep(self.retry.delay(attempt))
                continue
            if reply.status_code not in RETRY_STATUS:
                return reply
            last = f"HTTP {reply.status_code}: {reply.detail()}"
            self._retrying(attempt, last)
            await asyncio.sleep(self.retry.delay(attempt, reply.retry_after()))
        raise RemoteError(f"{self.url}{path}: gave up after {self.attempts} tries ({one_line(last)})")

    def _retrying(self, attempt: int, reason: str) -> None:
        if self.on_retry is not None and attempt < self.attempts:
            self.on_retry(self.url, attempt, self.attempts, one_line(reason))

    async def _once(self, method: str, path: str, hold: float, **kwargs: Any) -> Reply:
        where = f"{self.url}{path}"
        loop = asyncio.get_running_loop()
        body_started = False
        try:
            async with asyncio.timeout(self.deadline + hold) as limit:
                async with self.client.stream(method, path, **kwargs) as response:
                    # A long poll holds the status line; once it is here the body is due at once.
                    limit.reschedule(loop.time() + self.deadline)
                    body_started = True
                    # An error answer is read only as far as its reason needs.
                    most = self.max_body if response.status_code == 200 else MAX_ERROR_DETAIL_BYTES
                    body = await self._read(response, most, where)
                    return Reply(response.status_code, response.headers, body)
        except TimeoutError:
            if body_started:
                raise RemoteError(f"{where}: the answer did not end within {self.deadline:g}s") from None
            raise RemoteError(f"{where}: no answer within {self.deadline + hold:g}s") from None
        except httpx.TransportError:
            raise  # the caller retries these
        except httpx.HTTPError as exc:  # a body that cannot be decoded (Content-Encoding), …
            raise RemoteError(f"{where}: the answer could not be read: {one_line(str(exc))}") from None

    async def _read(self, response: httpx.Response, limit: int, where: str) -> bytearray:
        declared = response.headers.get("content-length", "")
        if response.status_code == 200 and declared.isdigit() and int(declared) > limit:
            raise RemoteError(f"{where}: the answer is {declared} bytes, more than the {limit} byte limit")
        body = bytearray()
        async for chunk in response.aiter_bytes():
            room = limit - len(body)
            if len(chunk) > room:
                if response.status_code != 200:
                    body += chunk[:room]  # enough of an error's text to say why
                    break
                raise RemoteError(f"{where}: the answer is more than the {limit} byte limit")
            body += chunk
        return body


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context per process: building one reads the CA bundle (~0.1 s), and a client is made
    per batch."""
    return ssl.create_default_context()


def make_client(url: str, api_key: str | None, timeout: float, connections: int) -> httpx.AsyncClient:
    """``timeout`` bounds each read (and the connect); the Service's deadline bounds the whole."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(
        base_url=url.rstrip("/"), headers=headers, timeout=timeout, limits=limits, verify=tls_context()
    )
