"""RemoteCaseLoader and RemoteRolloutExecutor: a benchmark service's cases and executions, over HTTP.

The executor submits each case (``POST /v1/rollouts/execute``), then polls its execution until it
completes or fails. Transport errors, 408, 429 (after its Retry-After) and 5xx are retried with
backoff; a 404 right after submit is tolerated for a grace period (a service behind a load balancer
may not know the id yet everywhere); an overall timeout bounds a case. Every answer is bounded in
time and size and validated (``remote_transport``). Whatever goes wrong, the case comes back as a
failed rollout carrying one line of error text — a run never crashes on one case.
Several URLs spread the executions (least in flight first); ``counts`` says how many ran where.
The service cannot read our workspace, so the policies travel in ``policy_set.policies`` — once
per snapshot and service; later requests send null and the service uses its cached set.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

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
from ovtui.train.components.remote_transport import (
    REQUEST_TIMEOUT,
    SERVICE_ATTEMPTS,
    SERVICE_RETRY,
    RemoteError,
    Reply,
    RetryListener,
    Service,
    make_client,
    one_line,
    parse,
)

EXECUTE_PATH = "/v1/rollouts/execute"
QUERY_PATH = "/v1/cases/query"
MAX_PAGES = 1000  # of one case query: a service that never stops paging is stopped here


class RemoteCaseLoader:
    """The cases of one split of a service (CaseLoader), fetched page by page (``next_cursor``) on
    first use and kept for the run (each epoch iterates the same cases). Paging stops after
    ``max_pages`` pages, or at a cursor the service gave before (it would page in a circle), with
    an error saying which."""

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
        max_pages: int = MAX_PAGES,
        request_timeout: float = REQUEST_TIMEOUT,
        retry: RetryPolicy = SERVICE_RETRY,
        attempts: int = SERVICE_ATTEMPTS,
        on_retry: RetryListener | None = None,
    ) -> None:
        if batch_size < 1:
            raise OvtuiError("batch_size must be at least 1")
        if max_pages < 1:
            raise OvtuiError("max_pages must be at least 1")
        self.url = url.rstrip("/")
        self.split = split
        self.query = CaseQuery(
            dataset=dataset, domain=domain, split=split, limit=page_size, filters=filters or {}
        )
        self.api_key = api_key
        self.batch_size = batch_size
        self.limit = limit
        self.max_pages = max_pages
        self.request_timeout = request_timeout
        self.retry = retry
        self.attempts = attempts
        self.on_retry = on_retry
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
        where = f"{self.url}{QUERY_PATH}"
        cursors: dict[str, int] = {}  # cursor → the page that gave it
        async with make_client(self.url, self.api_key, self.request_timeout, 4) as client:
            service = Service(
                self.url,
                retry=self.retry,
                attempts=self.attempts,
                deadline=self.request_timeout,
                on_retry=self.on_retry,
            )
            service.client = client
            for number in itertools.count(1):
                reply = await service.request("POST", QUERY_PATH, json=query.model_dump(mode="json"))
                if reply.status_code != 200:
                    raise RemoteError(f"{where}: HTTP {reply.status_code}: {reply.detail()}")
                page = parse(CasePage, reply, where, "a case page")
                cases.extend(page.cases)
                cursor = page.next_cursor
                if cursor is None or not page.cases or (self.limit and len(cases) >= self.limit):
                    break
                if cursor in cursors:
                    raise RemoteError(
                        f"{where}: page {number} gave next_cursor {one_line(cursor, 80)!r} again "
                        f"(page {cursors[cursor]} gave it first): the service pages in a circle"
                    )
                if number == self.max_pages:
                    raise RemoteError(
                        f"{where}: still a next_cursor after {number} pages ({len(cases)} cases): "
                        f"stopped at max_pages = {self.max_pages}"
                    )
                cursors[cursor] = number
                query.cursor = cursor
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
        request_timeout: float = REQUEST_TIMEOUT,
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
        self.request_timeout = request_timeout
        self.not_found_grace = not_found_grace
        self.long_poll = long_poll
        self.poll_interval = poll_interval
        self.max_poll_interval = max_poll_interval
        self.options = options or {}
        self.counts: Counter[str] = Counter()  # executions completed per URL
        self.failures: Counter[str] = Counter()
        self._services = [
            Service(u, retry=retry, attempts=attempts, deadline=request_timeout) for u in self.urls
        ]
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
        read_timeout = self.long_poll + self.request_timeout
        connections = min(self.max_in_flight, max(1, len(cases)))
        async with contextlib.AsyncExitStack() as stack:
            for service in self._services:
                service.snapshot_locks = {}  # asyncio locks belong to one loop; a later call may use another
                service.client = await stack.enter_async_context(
                    make_client(service.url, self.api_key, read_timeout, connections)
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
        reply: Reply | None = None
        if not snapshot:  # nothing to cache by: every request carries the policies
            reply = await self._post_execute(service, case, policy_set, context, True, self.long_poll)
        lost = False  # the service answered 409: it lost the set (a restart); send it ourselves
        while snapshot and reply is None:
            if snapshot in service.known_snapshots and not lost:
                reply = await self._post_execute(service, case, policy_set, context, False, self.long_poll)
                if reply.status_code == 409:
                    service.known_snapshots.discard(snapshot)
                    reply, lost = None, True
                continue
            async with service.snapshot_locks.setdefault(snapshot, asyncio.Lock()):
                if snapshot in service.known_snapshots and not lost:
                    continue  # another submit sent them meanwhile: go the concurrent way
                reply = await self._post_execute(service, case, policy_set, context, True, 0.0)
                if reply.status_code == 200:
                    service.known_snapshots.add(snapshot)
        assert reply is not None  # the loop ends only with an answer
        where = f"{service.url}{EXECUTE_PATH}"
        if reply.status_code != 200:
            raise RemoteError(f"{where}: HTTP {reply.status_code}: {reply.detail()}")
        return parse(Execution, reply, where, "an execution")

    async def _post_execute(
        self,
        service: Service,
        case: Case,
        policy_set: ExperienceSet,
        context: ExecutionContext,
        send_policies: bool,
        wait: float,
    ) -> Reply:
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
            "POST", EXECUTE_PATH, hold=wait, json=request.model_dump(mode="json"), params=params
        )

    async def _run(
        self, service: Service, case: Case, policy_set: ExperienceSet, context: ExecutionContext
    ) -> Rollout:
        execution = await self._submit(service, case, policy_set, context)
        submitted = time.monotonic()
        path = f"/v1/rollouts/executions/{execution.execution_id}"
        where = f"{service.url}{path}"
        pause = self.poll_interval
        while execution.status not in ("completed", "failed"):
            if context.cancelled:
                raise RemoteError(
                    f"run cancelled while {execution.execution_id} was running on {service.url}"
                )
            reply = await service.request("GET", path, hold=self.long_poll, params={"wait": self.long_poll})
            if reply.status_code == 404 and time.monotonic() - submitted < self.not_found_grace:
                await asyncio.sleep(pause)
                pause = min(self.max_poll_interval, pause * 2)
                continue
            if reply.status_code != 200:
                raise RemoteError(f"{where}: HTTP {reply.status_code}: {reply.detail()}")
            execution = parse(Execution, reply, where, "an execution")
            if execution.status not in ("completed", "failed"):
                await asyncio.sleep(pause)  # a service that does not long-poll answered at once
                pause = min(self.max_poll_interval, pause * 1.5)
        if execution.status == "failed" or execution.rollout is None:
            error = one_line(execution.error or "the service reported no rollout")
            return failed_rollout(case, context, f"{service.url}: {error}", service.url)
        rollout = execution.rollout
        if rollout.policy_snapshot_id != context.policy_snapshot_id:
            return failed_rollout(
                case,
                context,
                f"{service.url} answered policy_snapshot_id {one_line(rollout.policy_snapshot_id, 80)!r}, "
                f"not {context.policy_snapshot_id!r}",
                service.url,
            )
        if rollout.case.name != case.name:
            return failed_rollout(
                case,
                context,
                f"{service.url} answered a rollout of case {one_line(rollout.case.name, 80)!r}, "
                f"not of {case.name!r}",
                service.url,
            )
        rollout.metadata = {**rollout.metadata, "service": service.url}
        return rollout
