"""A benchmark service that misbehaves on purpose, on 127.0.0.1 in a thread of the test process.

It serves the sample environment's cases and runs them for real, except the cases named in
``execute`` (case name → one of ``EXECUTE_BEHAVIOURS``), and its case query follows ``query`` (one
of ``QUERY_BEHAVIOURS``). aiohttp, not FastAPI: the misbehaviour (a body dripped a byte at a time,
one without end, a Content-Length that lies) needs the raw response stream.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ovtui.core.bounds import MIB
from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet
from ovtui.environments.sample.environment import SampleEnvironment

EXECUTE_BEHAVIOURS = (
    "not_json",  # 200 with an HTML page
    "wrong_shape",  # 200 with JSON that is no execution (status "banana")
    "poll_not_json",  # the submit answers "running"; the poll answers 200 with text
    "drip",  # 200 whose body comes a byte at a time, without end
    "huge",  # 200 with a 100 MB body, chunked (no Content-Length to refuse it by)
    "lying_length",  # 200 declaring a 200 MB body, then nothing
    "storm",  # 500 on every try (Retry-After: 0, so the retries come quickly)
    "other_case",  # a completed execution, of another case than the one sent
)
QUERY_BEHAVIOURS = ("normal", "endless", "cycle", "not_json", "wrong_shape", "drip", "huge")
DRIP_EVERY = 0.2  # seconds between two bytes: far below any per-read timeout
HUGE_BYTES = 100 * 1000 * 1000


@dataclass
class HostileService:
    execute: dict[str, str] = field(default_factory=dict)
    query: str = "normal"
    split_size: int = 4  # cases of each split it serves
    environment: SampleEnvironment = field(default_factory=SampleEnvironment)
    hits: Counter[str] = field(default_factory=Counter)  # requests per route
    bytes_sent: Counter[str] = field(default_factory=Counter)  # of the huge and dripped bodies, per case

    def cases(self, split: str) -> list[Case]:
        return self.environment.cases(split)[: self.split_size]

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/cases/query", self._query)
        app.router.add_post("/v1/rollouts/execute", self._execute)
        app.router.add_get("/v1/rollouts/executions/{execution_id}", self._poll)
        return app

    async def _query(self, request: web.Request) -> web.StreamResponse:
        self.hits["query"] += 1
        body = await request.json()
        cases = [c.model_dump(mode="json") for c in self.cases(body.get("split", "train"))]
        cursor = body.get("cursor")
        if self.query == "endless":  # a fresh cursor each time, never the end
            return web.json_response({"cases": cases[:1], "next_cursor": f"c{self.hits['query']}"})
        if self.query == "cycle":  # a → b → a → …
            return web.json_response({"cases": cases[:1], "next_cursor": "b" if cursor == "a" else "a"})
        if self.query in ("not_json", "wrong_shape", "drip", "huge"):
            return await self._misbehave(request, self.query, "query")
        return web.json_response({"cases": cases, "next_cursor": None})

    async def _execute(self, request: web.Request) -> web.StreamResponse:
        self.hits["execute"] += 1
        body = await request.json()
        case = Case.model_validate(body["case"])
        snapshot = body["execution_context"]["policy_snapshot_id"]
        behaviour = self.execute.get(case.name)
        if behaviour == "poll_not_json":
            return web.json_response(execution(case.name, "running"))
        if behaviour == "other_case":
            case = self.environment.cases("test")[0]
        elif behaviour is not None:
            return await self._misbehave(request, behaviour, case.name)
        context = ExecutionContext(policy_snapshot_id=snapshot)
        rollout = await self.environment.execute(case, ExperienceSet(root_uri=""), context)
        if rollout.evaluation is None:
            rollout.evaluation = await self.environment.evaluate(rollout)
        rollout.policy_snapshot_id = snapshot
        body = execution(case.name, "completed", rollout=rollout.model_dump(mode="json"))
        return web.json_response(body)

    async def _poll(self, request: web.Request) -> web.StreamResponse:
        self.hits["poll"] += 1
        return web.Response(text="upstream said: oops", content_type="text/plain")

    async def _misbehave(self, request: web.Request, behaviour: str, name: str) -> web.StreamResponse:
        if behaviour == "not_json":
            return web.Response(text="<html><body>Bad Gateway</body></html>", content_type="text/html")
        if behaviour == "wrong_shape":
            return web.json_response(
                {"execution_id": "x1", "status": "banana", "created_at": 0, "updated_at": 0}
                if name != "query"
                else {"cases": [{"name": 7}]}
            )
        if behaviour == "storm":
            return web.json_response({"detail": "overloaded"}, status=500, headers={"Retry-After": "0"})
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if behaviour == "lying_length":
            response.content_length = 2 * HUGE_BYTES
        await response.prepare(request)
        try:
            if behaviour == "drip":
                await response.write(b"{")
                for _ in itertools.count():
                    await asyncio.sleep(DRIP_EVERY)
                    await response.write(b" ")
                    self.bytes_sent[name] += 1
            elif behaviour == "huge":
                chunk = b" " * MIB
                while self.bytes_sent[name] < HUGE_BYTES:
                    await response.write(chunk)
                    self.bytes_sent[name] += len(chunk)
            elif behaviour == "lying_length":
                await asyncio.Event().wait()  # the body never comes
        except (ConnectionError, asyncio.CancelledError):
            pass  # the client stopped reading: what it should do
        return response


def execution(name: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "execution_id": f"exec-{name}",
        "status": status,
        "case_name": name,
        "created_at": 0.0,
        "updated_at": 0.0,
        **extra,
    }


@contextmanager
def hostile_service(service: HostileService) -> Iterator[str]:
    """Serve ``service`` on a free loopback port in a thread; yields its base URL."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    runner = web.AppRunner(service.app(), shutdown_timeout=1.0)

    async def start() -> int:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return int(runner.addresses[0][1])

    port = asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=30)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
