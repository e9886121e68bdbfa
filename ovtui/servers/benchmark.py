"""The benchmark service: one environment over HTTP, on the server base, so that a trainer anywhere
(ovtui's remote datasets, another tool) runs its cases without the environment's code or data.

``POST /v1/cases/query`` pages the cases of a split; ``POST /v1/rollouts/execute`` queues one case
and answers its execution id at once; ``GET /v1/rollouts/executions/{id}`` says running, completed
(with the rollout) or failed (with the error). ``?wait=S`` on either holds the answer up to S
seconds until the execution finishes (long polling; a quick execution then costs one round trip,
and the protocol's clients that do not send it get the answer at once and poll). The service never
sees the client's workspace, so an execute request carries the experiences; the set is cached by
``policy_snapshot_id`` and a later request for the same snapshot may leave ``policies`` null.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import Response

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import ExperienceSet
from ovtui.plugins.environment import Environment, EnvironmentError_, close_environment
from ovtui.protocols.benchmark import CasePage, CaseQuery, ExecuteRequest, Execution, case_matches
from ovtui.servers.base.app import create_app
from ovtui.storage.job_pool import PoolFull, WorkerPool
from ovtui.storage.jobs import Job, JobStore

POLICY_CACHE = 32
MAX_WAIT = 30.0
RETRY_AFTER_FULL = "1"


class PolicyCache:
    """Policy sets by snapshot id (ids are content hashes: one id, one set), least recent dropped."""

    def __init__(self, size: int = POLICY_CACHE) -> None:
        self.size = size
        self._sets: OrderedDict[str, ExperienceSet] = OrderedDict()

    def resolve(self, request: ExecuteRequest) -> ExperienceSet:
        snapshot = request.execution_context.policy_snapshot_id
        payload = request.policy_set
        if payload.policies is None:
            cached = self._sets.get(snapshot) if snapshot else None
            if cached is None:
                raise HTTPException(
                    409,
                    f"policy_set.policies is null and no policy set is cached for policy_snapshot_id "
                    f"{snapshot!r}: send the policies",
                )
            self._sets.move_to_end(snapshot)
            return cached
        policy_set = ExperienceSet(
            root_uri=payload.root_uri, policies=payload.policies, metadata=payload.metadata
        )
        if snapshot:
            self._sets[snapshot] = policy_set
            while len(self._sets) > self.size:
                self._sets.popitem(last=False)
        return policy_set


def execution_body(job: Job) -> dict[str, Any]:
    body: dict[str, Any] = {
        "execution_id": job.id,
        "status": job.status.value,
        "case_name": job.label,
        "created_at": job.created_at,
        "updated_at": job.updated_at,
        "error": job.error,
    }
    if job.result is not None:
        body["rollout"] = job.result
    return body


def json_response(body: dict[str, Any], status: int = 200) -> Response:
    return Response(json.dumps(body, ensure_ascii=False), status, media_type="application/json")


def create_env_app(
    environment: Environment,
    store: JobStore,
    *,
    workers: int = 4,
    api_key: str | None = None,
    max_queued: int = 4096,
) -> FastAPI:
    pool: WorkerPool | None = None
    policies = PolicyCache()

    def the_pool() -> WorkerPool:
        nonlocal pool
        if pool is None:  # made inside the running loop (its semaphore belongs to that loop)
            pool = WorkerPool(store, workers, max_queued=max_queued)
        return pool

    async def lifespan(app: FastAPI) -> Any:
        yield
        if pool is not None:
            await pool.close()
        await close_environment(environment)  # its own models' connections, of this loop
        store.close()

    def health() -> dict[str, Any]:
        return {
            "environment": environment.name,
            "workers": workers,
            "pending": pool.pending if pool else 0,
        }

    app = create_app(f"ovtui env {environment.name}", api_key=api_key, health=health, lifespan=lifespan)

    @app.post("/v1/cases/query", response_model=CasePage, tags=["cases"])
    async def query_cases(query: CaseQuery) -> CasePage:
        try:
            cases = environment.cases(query.split)
        except EnvironmentError_ as exc:
            raise HTTPException(404, str(exc)) from None
        if query.filters:
            cases = [c for c in cases if case_matches(c, query.filters)]
        start = 0
        if query.cursor is not None:
            if not query.cursor.isdigit():
                raise HTTPException(422, f"cursor: {query.cursor!r} is not a cursor this service gave")
            start = int(query.cursor)
        end = start + query.limit
        return CasePage(
            cases=cases[start:end], next_cursor=str(end) if end < len(cases) else None, total=len(cases)
        )

    @app.post("/v1/rollouts/execute", response_model=Execution, tags=["rollouts"])
    async def execute(
        request: ExecuteRequest,
        wait: float = Query(0.0, ge=0.0, le=MAX_WAIT, description="hold the answer until done (s)"),
    ) -> Response:
        policy_set = policies.resolve(request)
        meta = request.execution_context.metadata
        epoch = meta.get("epoch")
        context = ExecutionContext(
            policy_snapshot_id=request.execution_context.policy_snapshot_id,
            run_id=str(meta["run_id"]) if meta.get("run_id") else None,
            stage=str(meta.get("stage") or "rollouts"),
            epoch=epoch if isinstance(epoch, int) else -1,
        )
        case = request.case

        async def work() -> dict[str, Any]:
            rollout = await environment.execute(case, policy_set, context)
            rollout.policy_snapshot_id = context.policy_snapshot_id  # the protocol's round trip
            return rollout.model_dump(mode="json")

        try:
            job = the_pool().submit(case.name, work)
        except PoolFull as exc:
            raise HTTPException(429, str(exc), headers={"Retry-After": RETRY_AFTER_FULL}) from None
        if wait > 0:
            await the_pool().wait(job.id, wait)
        return json_response(execution_body(job))

    @app.get("/v1/rollouts/executions/{execution_id}", response_model=Execution, tags=["rollouts"])
    async def execution(
        execution_id: str,
        wait: float = Query(0.0, ge=0.0, le=MAX_WAIT, description="hold the answer until done (s)"),
    ) -> Response:
        job = store.get(execution_id)
        if job is None:
            raise HTTPException(404, f"no execution {execution_id!r} on this service")
        if not job.finished and wait > 0:
            await the_pool().wait(execution_id, wait)
        return json_response(execution_body(job))

    return app
