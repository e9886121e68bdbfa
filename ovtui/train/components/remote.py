"""RemoteCaseLoader and RemoteRolloutExecutor: a benchmark service's cases and executions, over HTTP.

The executor submits each case (``POST /v1/rollouts/execute``), then polls its execution until it
completes or fails. Transport errors, 408, 429 (after its Retry-After) and 5xx are retried with
backoff; a 404 right after submit is tolerated for a grace period (a service behind a load balancer
may not know the id yet everywhere); an overall timeout bounds a case. Whatever goes wrong, the
case comes back as a failed rollout carrying the error text — a run never crashes on one case.
Several URLs spread the executions (least in flight first); ``counts`` says how many ran where.
The service cannot read our workspace, so the policies travel in ``policy_set.policies`` — once
per snapshot and service; later requests send null and the service uses its cached set.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import ssl
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any

import httpx2 as httpx
from pydantic import ValidationError

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import EXECUTION_ERROR, Case, ExperienceSet, Rollout
from ovtui.core.errors import OvtuiError
from ovtui.core.retry import RetryPolicy
from ovtui.core.rollouts import failed_rollout
from ovtui.protocols.benchmark import (
    CasePage,
    CaseQuery,
    ExecuteRequest,
    Execution,
    ExecutionContextPayload,
    PolicySetPayload,
)

RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
EXECUTE_PATH = "/v1/rollouts/execute"
QUERY_PATH = "/v1/cases/query"


class RemoteError(OvtuiError):
    """A service that did not give a usable answer after the retries."""


# A service's waits are short and regular: it is usually on this machine or the next, and a poll
# loop already spreads the requests.
SERVICE_RETRY = RetryPolicy(base_delay=0.05, max_delay=2.0, max_retry_after=30.0, jitter=False)
SERVICE_ATTEMPTS = 8  # tries of one request (transport errors, 408, 429, 5xx)


def retry_after(response: httpx.Response) -> float | None:
    """The wait a response's Retry-After asks for (seconds or an HTTP date; none in the past), or None."""
    value = response.headers.get("retry-after", "").strip()
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


@dataclass
class Service:
    """One service URL with its connection pool and what it already holds."""

    url: str
    client: httpx.AsyncClient = field(init=False)
    retry: RetryPolicy = SERVICE_RETRY
    attempts: int = SERVICE_ATTEMPTS
    in_flight: int = 0
    known_snapshots: set[str] = field(default_factory=set)
    snapshot_locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The final answer after retrying transport errors and retryable statuses."""
        last = ""
        for attempt in range(1, self.attempts + 1):
            try:
                response = await self.client.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                await asyncio.sleep(self.retry.delay(attempt))
                continue
            if response.status_code not in RETRY_STATUS:
                return response
            last = f"HTTP {response.status_code}: {detail(response)}"
            await asyncio.sleep(self.retry.delay(attempt, retry_after(response)))
        raise RemoteError(f"{self.url}{path}: gave up after {self.attempts} tries ({last})")


def detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:300]
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])[:300]
    return str(body)[:300]


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context per process: building one reads the CA bundle (~0.1 s), and a client is made
    per batch."""
    return ssl.create_default_context()


def make_client(url: str, api_key: str | None, timeout: float, connections: int) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(
        base_url=url.rstrip("/"), headers=headers, timeout=timeout, limits=limits, verify=tls_context()
    )


class RemoteCaseLoader:
    """The cases of one split of a service (CaseLoader), fetched page by page (``next_cursor``) on
    first use and kept for the run (each epoch iterates the same cases)."""

    def __init__(
        self,
        url: str,
        split: str,
        *,
        dataset: str | None = None,
        domain: str | None = None,
        filters: dict[str, Any] | None = None,
        api_key: str | None = None,
        batch_size: int = 8,
        limit: int | None = None,
        page_size: int = 100,
        retry: RetryPolicy = SERVICE_RETRY,
        attempts: int = SERVICE_ATTEMPTS,
    ) -> None:
        if batch_size < 1:
            raise OvtuiError("batch_size must be at least 1")
        self.url = url.rstrip("/")
        self.split = split
        self.query = CaseQuery(
            dataset=dataset, domain=domain, split=split, limit=page_size, filters=filters or {}
        )
        self.api_key = api_key
        self.batch_size = batch_size
        self.limit = limit
        self.retry = retry
        self.attempts = attempts
        self._cases: list[Case] | None = None

    async def cases(self) -> list[Case]:
        if self._cases is None:
            self._cases = await self._fetch()
        return self._cases

    async def count(self) -> int:
        return len(await self.cases())

    async def batches(self) -> AsyncIterator[list[Case]]:
        cases = await self.cases()
        for start in range(0, len(cases), self.batch_size):
            yield cases[start : start + self.batch_size]

    async def _fetch(self) -> list[Case]:
        cases: list[Case] = []
        query = self.query.model_copy()
        async with make_client(self.url, self.api_key, 60.0, 4) as client:
            service = Service(self.url, self.retry, self.attempts)
            service.client = client
            while True:
                response = await service.request("POST", QUERY_PATH, json=query.model_dump(mode="json"))
                if response.status_code != 200:
                    raise RemoteError(
                        f"{self.url}{QUERY_PATH}: HTTP {response.status_code}: {detail(response)}"
                    )
                try:
                    page = CasePage.model_validate_json(response.content)
                except ValidationError as exc:
                    message = exc.errors()[0]["msg"]
                    raise RemoteError(f"{self.url}{QUERY_PATH}: not a case page: {message}") from None
                cases.extend(page.cases)
                if page.next_cursor is None or not page.cases or (self.limit and len(cases) >= self.limit):
                    break
                query.cursor = page.next_cursor
        return cases[: self.limit] if self.limit else cases


class RemoteRolloutExecutor:
    label = "remote"

    def __init__(
        self,
        urls: list[str],
        *,
        api_key: str | None = None,
        max_in_flight: int = 32,
        timeout: float = 600.0,
        not_found_grace: float = 5.0,
        long_poll: float = 10.0,
        poll_interval: float = 0.05,
        max_poll_interval: float = 2.0,
        retry: RetryPolicy = SERVICE_RETRY,
        attempts: int = SERVICE_ATTEMPTS,
        options: dict[str, Any] | None = None,
    ) -> None:
        if not urls:
            raise OvtuiError("a remote dataset needs at least one url")
        if max_in_flight < 1:
            raise OvtuiError("max_in_flight must be at least 1")
        self.urls = [u.rstrip("/") for u in urls]
        self.api_key = api_key
        self.max_in_flight = max_in_flight
        self.timeout = timeout
        self.not_found_grace = not_found_grace
        self.long_poll = long_poll
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        self.options = options or {}
        self.counts: Counter[str] = Counter()  # executions completed per URL
        self.failures: Counter[str] = Counter()
        self._services = [Service(u, retry=retry, attempts=attempts) for u in self.urls]
        self._turn = itertools.count()

    def _pick(self, services: list[Service]) -> Service:
        """The service with the fewest executions in flight; ties go round the list."""
        start = next(self._turn) % len(services)
        ordered = services[start:] + services[:start]
        return min(ordered, key=lambda s: s.in_flight)

    async def execute(
        self, cases: list[Case], policy_set: ExperienceSet, context: ExecutionContext
    ) -> list[Rollout]:
        """Connections live for one call (one batch): nothing is left open between batches."""
        slots = asyncio.Semaphore(self.max_in_flight)
        request_timeout = self.long_poll + 30.0
        connections = min(self.max_in_flight, max(1, len(cases)))
        async with contextlib.AsyncExitStack() as stack:
            for service in self._services:
                service.snapshot_locks = {}  # asyncio locks belong to one loop; a later call may use another
                service.client = await stack.enter_async_context(
                    make_client(service.url, self.api_key, request_timeout, connections)
                )
            return list(
                await asyncio.gather(
                    *(self._one(c, policy_set, context, self._services, slots) for c in cases)
                )
            )

    async def _one(
        self,
        case: Case,
        policy_set: ExperienceSet,
        context: ExecutionContext,
        services: list[Service],
        slots: asyncio.Semaphore,
    ) -> Rollout:
        async with slots:
            service = self._pick(services)
            service.in_flight += 1
            try:
                rollout = await asyncio.wait_for(self._run(service, case, policy_set, context), self.timeout)
            except TimeoutError:
                rollout = failed_rollout(
                    case, context, f"no result from {service.url} within {self.timeout:g}s", service.url
                )
            except RemoteError as exc:
                rollout = failed_rollout(case, context, str(exc), service.url)
            finally:
                service.in_flight -= 1
        if EXECUTION_ERROR in rollout.metadata:
            self.failures[service.url] += 1
        else:
            self.counts[service.url] += 1
        return rollout

    async def _submit(
        self, service: Service, case: Case, policy_set: ExperienceSet, context: ExecutionContext
    ) -> Execution:
        """Submit one case. Once the service holds the snapshot's policies, submits run concurrently
        and each asks the service to hold its answer until the execution finishes (``?wait=``), so a
        quick execution costs one round trip; the first submit of a snapshot carries the policies
        while the others wait for it."""
        snapshot = context.policy_snapshot_id
        response: httpx.Response | None = None
        if not snapshot:  # nothing to cache by: every request carries the policies
            response = await self._post_execute(service, case, policy_set, context, True, self.long_poll)
        lost = False  # the service answered 409: it lost the set (a restart); send it ourselves
        while snapshot and response is None:
            if snapshot in service.known_snapshots and not lost:
                response = await self._post_execute(service, case, policy_set, context, False, self.long_poll)
                if response.status_code == 409:
                    service.known_snapshots.discard(snapshot)
                    response, lost = None, True
                continue
            async with service.snapshot_locks.setdefault(snapshot, asyncio.Lock()):
                if snapshot in service.known_snapshots and not lost:
                    continue  # another submit sent them meanwhile: go the concurrent way
                response = await self._post_execute(service, case, policy_set, context, True, 0.0)
                if response.status_code == 200:
                    service.known_snapshots.add(snapshot)
        assert response is not None  # the loop ends only with an answer
        if response.status_code != 200:
            raise RemoteError(f"{service.url}{EXECUTE_PATH}: HTTP {response.status_code}: {detail(response)}")
        return Execution.model_validate_json(response.content)

    async def _post_execute(
        self,
        service: Service,
        case: Case,
        policy_set: ExperienceSet,
        context: ExecutionContext,
        send_policies: bool,
        wait: float,
    ) -> httpx.Response:
        request = ExecuteRequest(
            case=case,
            policy_set=PolicySetPayload(
                root_uri=policy_set.root_uri,
                policies=list(policy_set.policies) if send_policies else None,
            ),
            execution_context=ExecutionContextPayload(
                policy_snapshot_id=context.policy_snapshot_id,
                metadata={"run_id": context.run_id, "stage": context.stage, "epoch": context.epoch},
            ),
            options=self.options,
        )
        params = {"wait": wait} if wait > 0 else None
        return await service.request(
            "POST", EXECUTE_PATH, json=request.model_dump(mode="json"), params=params
        )

    async def _run(
        self, service: Service, case: Case, policy_set: ExperienceSet, context: ExecutionContext
    ) -> Rollout:
        execution = await self._submit(service, case, policy_set, context)
        submitted = time.monotonic()
        path = f"/v1/rollouts/executions/{execution.execution_id}"
        pause = self.poll_interval
        while execution.status not in ("completed", "failed"):
            if context.cancelled:
                raise RemoteError(
                    f"run cancelled while {execution.execution_id} was running on {service.url}"
                )
            response = await service.request("GET", path, params={"wait": self.long_poll})
            if response.status_code == 404 and time.monotonic() - submitted < self.not_found_grace:
                await asyncio.sleep(pause)
                pause = min(self.max_poll_interval, pause * 2)
                continue
            if response.status_code != 200:
                raise RemoteError(f"{service.url}{path}: HTTP {response.status_code}: {detail(response)}")
            execution = Execution.model_validate_json(response.content)
            if execution.status not in ("completed", "failed"):
                await asyncio.sleep(pause)  # a service that does not long-poll answered at once
                pause = min(self.max_poll_interval, pause * 1.5)
        if execution.status == "failed" or execution.rollout is None:
            error = execution.error or "the service reported no rollout"
            return failed_rollout(case, context, f"{service.url}: {error}", service.url)
        rollout = execution.rollout
        if rollout.policy_snapshot_id != context.policy_snapshot_id:
            return failed_rollout(
                case,
                context,
                f"{service.url} answered policy_snapshot_id {rollout.policy_snapshot_id!r}, "
                f"not {context.policy_snapshot_id!r}",
                service.url,
            )
        rollout.metadata = {**rollout.metadata, "service": service.url}
        return rollout
