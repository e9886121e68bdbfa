"""The server base: binding rule, bearer auth over a real socket, the job store across restarts,
the worker pool's bound."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpx2 as httpx
import pytest
from server_support import threaded_server

from ovtui.servers.base.app import create_app
from ovtui.servers.base.binding import ServerConfigError, is_loopback, resolve_api_key
from ovtui.storage.job_pool import PoolFull, WorkerPool
from ovtui.storage.jobs import INTERRUPTED, LOG_NAME, Job, JobStatus, JobStore, StateFolderBusy

KEY = "test-key-5d2e"


def test_loopback_hosts() -> None:
    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.168.1.4", "::", "example.com"))


def test_non_loopback_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_api_key("127.0.0.1", None) is None
    with pytest.raises(ServerConfigError, match="--api-key-env"):
        resolve_api_key("0.0.0.0", None)
    monkeypatch.delenv("OVTUI_TEST_SERVER_KEY", raising=False)
    with pytest.raises(ServerConfigError, match="OVTUI_TEST_SERVER_KEY"):
        resolve_api_key("0.0.0.0", "OVTUI_TEST_SERVER_KEY")
    monkeypatch.setenv("OVTUI_TEST_SERVER_KEY", KEY)
    assert resolve_api_key("0.0.0.0", "OVTUI_TEST_SERVER_KEY") == KEY


def test_bearer_key_checked_on_every_route_but_health() -> None:
    app = create_app("probe", api_key=KEY, health=lambda: {"extra": 1})

    @app.get("/private")
    async def private() -> dict[str, bool]:
        return {"ok": True}

    with threaded_server(app) as url, httpx.Client(base_url=url) as client:
        health = client.get("/health")
        assert health.status_code == 200
        assert health.json() == {"status": "ok", "service": "probe", "extra": 1}
        for path in ("/private", "/openapi.json", "/docs", "/nowhere"):
            assert client.get(path).status_code == 401, path
        wrong = client.get("/private", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        assert wrong.headers["www-authenticate"] == "Bearer"
        good = client.get("/private", headers={"Authorization": f"Bearer {KEY}"})
        assert good.json() == {"ok": True}
        assert client.get("/openapi.json", headers={"Authorization": f"Bearer {KEY}"}).status_code == 200


def test_job_store_keeps_finished_jobs_and_fails_interrupted_ones(tmp_path: Path) -> None:
    store = JobStore(tmp_path, prefix="x_")
    done, failed, running, queued = (store.create(label) for label in "abcd")
    store.finish(done, result={"value": 1})
    store.finish(failed, error="boom")
    store.mark_running(running)
    with pytest.raises(StateFolderBusy):
        JobStore(tmp_path)
    store.close()
    with (tmp_path / LOG_NAME).open("a") as log:
        log.write('{"id": "x_cut", "lab')  # a line cut short by a kill

    reopened = JobStore(tmp_path)

    def job_of(job_id: str) -> Job:
        found = reopened.get(job_id)
        assert found is not None, job_id
        return found

    assert job_of(done.id).status is JobStatus.COMPLETED
    assert job_of(done.id).result == {"value": 1}
    assert job_of(failed.id).error == "boom"
    for job in (running, queued):
        again = job_of(job.id)
        assert again.status is JobStatus.FAILED
        assert again.error == INTERRUPTED
        assert again.label == job.label
    assert reopened.get("x_cut") is None
    reopened.close()
    assert len((tmp_path / LOG_NAME).read_text().splitlines()) == 4  # compacted


def test_job_store_keeps_the_latest_finished_jobs_and_compacts_its_log(tmp_path: Path) -> None:
    store = JobStore(tmp_path, keep_finished=3)
    jobs = [store.create(f"j{n}") for n in range(100)]
    for job in jobs:
        store.finish(job, result={"n": job.label})
    assert [store.get(j.id) for j in jobs[:97]] == [None] * 97
    assert [j.label for j in jobs[97:] if store.get(j.id)] == ["j97", "j98", "j99"]
    lines = (tmp_path / LOG_NAME).read_text().splitlines()
    assert len(lines) <= 3 + 64  # compacted while running, not 200 lines
    store.close()
    again = JobStore(tmp_path, keep_finished=3)
    assert sorted(j.label for j in again.jobs.values()) == ["j97", "j98", "j99"]
    again.close()


async def test_worker_pool_runs_at_most_workers_at_once(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    pool = WorkerPool(store, workers=2, max_queued=5)
    release = asyncio.Event()
    running = 0
    peak = 0
    started = asyncio.Queue[int]()

    def job(n: int) -> Callable[[], Awaitable[dict[str, int]]]:
        async def work() -> dict[str, int]:
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await started.put(n)
            await release.wait()
            running -= 1
            if n == 3:
                raise ValueError("case 3 broke")
            return {"n": n}

        return work

    jobs = [pool.submit(f"job{n}", job(n)) for n in range(5)]
    with pytest.raises(PoolFull):
        pool.submit("one too many", job(9))
    await started.get()
    await started.get()
    assert started.empty() and peak == 2
    assert sum(j.status is JobStatus.RUNNING for j in jobs) == 2
    release.set()
    for j in jobs:
        await pool.wait(j.id, 5)
    assert peak == 2
    assert [j.status for j in jobs].count(JobStatus.COMPLETED) == 4
    assert jobs[3].error == "ValueError: case 3 broke"
    assert jobs[4].result == {"n": 4}
    await pool.close()
    store.close()
