"""RemoteRolloutExecutor against services that misbehave, over real sockets: 429 with Retry-After,
404 right after submit, 5xx, failed executions, a stuck one, a wrong snapshot id, a bearer key,
and a service killed mid-run and restarted on its state folder."""

from __future__ import annotations

import asyncio
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from server_support import start_cli_server, stop, threaded_server
from workspace_support import build_sample_workspace

from ovtui.cli.main import main
from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, ExperienceSet, Rollout, RubricEvaluation
from ovtui.environments.sample.environment import SampleEnvironment
from ovtui.testing import hanging_env
from ovtui.train.components.remote import RemoteCaseLoader, RemoteRolloutExecutor
from ovtui.train.components.remote_transport import SERVICE_RETRY
from ovtui.wiring.workspace import TrainOptions, Workspace

FAST = replace(SERVICE_RETRY, base_delay=0.01, max_delay=0.2)
KEY_ENV = "OVTUI_TEST_ENV_KEY"
EMPTY = ExperienceSet(root_uri="viking://user/default/memories/experiences")


def graded(rollout: Rollout) -> RubricEvaluation:
    assert rollout.evaluation is not None, rollout.case.name
    return rollout.evaluation


def _case(name: str) -> Case:
    return Case.model_validate({"name": name, "task_signature": f"t:{name}", "rubric": {"name": "r"}})


class Script:
    """A protocol server whose answers depend on the case name; every request is timed."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[str, float, int]]] = defaultdict(list)
        self.rollouts: dict[str, dict[str, Any]] = {}

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/rollouts/execute")
        async def execute(request: Request) -> JSONResponse:
            body = await request.json()
            name = body["case"]["name"]
            calls = [c for c in self.seen[name] if c[0] == "POST"]
            status = 429 if name == "limited" and not calls else 200
            self.seen[name].append(("POST", time.monotonic(), status))
            if status == 429:
                return JSONResponse({"detail": "slow down"}, 429, headers={"Retry-After": "1"})
            if name == "rejected":
                return JSONResponse({"detail": "case.input: the service cannot run this case"}, 400)
            snapshot = body["execution_context"]["policy_snapshot_id"]
            self.rollouts[name] = Rollout(
                case=Case.model_validate(body["case"]),
                policy_snapshot_id="other" if name == "wrong_snapshot" else snapshot,
                evaluation=RubricEvaluation(passed=True, score=1.0),
            ).model_dump(mode="json")
            return JSONResponse(self._execution(name, "running"))

        @app.get("/v1/rollouts/executions/{execution_id}")
        async def poll(execution_id: str) -> JSONResponse:
            name = execution_id.removeprefix("exec-")
            polls = sum(1 for c in self.seen[name] if c[0] == "GET")
            status, body = 200, self._execution(name, "completed")
            if name.startswith("late") and polls < 4:
                status = (404, 404, 503, 500)[polls]
                body = {"detail": "not yet"}
            elif name == "broken":
                body = self._execution(name, "failed", error="tool crashed: KeyError 'seat'")
            elif name == "stuck":
                body = self._execution(name, "running")
            self.seen[name].append(("GET", time.monotonic(), status))
            return JSONResponse(body, status)

        return app

    def _execution(self, name: str, status: str, error: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "execution_id": f"exec-{name}",
            "status": status,
            "case_name": name,
            "created_at": 0.0,
            "updated_at": 0.0,
            "error": error,
        }
        if status == "completed":
            body["rollout"] = self.rollouts[name]
        return body


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[str, Script]]:
    script = Script()
    with threaded_server(script.app()) as url:
        yield url, script


async def test_retries_and_failures_become_case_results(scripted: tuple[str, Script]) -> None:
    url, script = scripted
    executor = RemoteRolloutExecutor(
        [url], retry=FAST, timeout=2.0, not_found_grace=5.0, poll_interval=0.01, max_poll_interval=0.05
    )
    names = ["fine", "limited", "late", "broken", "stuck", "wrong_snapshot", "rejected"]
    context = ExecutionContext(policy_snapshot_id="snap-A")
    rollouts = {r.case.name: r for r in await executor.execute([_case(n) for n in names], EMPTY, context)}

    assert graded(rollouts["fine"]).passed and rollouts["fine"].policy_snapshot_id == "snap-A"

    posts = [c for c in script.seen["limited"] if c[0] == "POST"]
    assert [c[2] for c in posts] == [429, 200]
    assert posts[1][1] - posts[0][1] >= 0.95  # Retry-After: 1 was honoured
    assert graded(rollouts["limited"]).passed

    assert [c[2] for c in script.seen["late"] if c[0] == "GET"] == [404, 404, 503, 500, 200]
    assert graded(rollouts["late"]).passed

    def error(name: str) -> str:
        return str(rollouts[name].metadata["execution_error"])

    assert not graded(rollouts["broken"]).passed
    assert "tool crashed: KeyError 'seat'" in error("broken")
    assert "tool crashed" in graded(rollouts["broken"]).feedback[0]
    assert "within 2s" in error("stuck")
    assert "'other'" in error("wrong_snapshot")
    assert "HTTP 400: case.input: the service cannot run this case" in error("rejected")
    assert executor.counts == {url: 3} and executor.failures == {url: 4}


async def test_not_found_past_the_grace_period_fails_the_case(scripted: tuple[str, Script]) -> None:
    url, _ = scripted
    executor = RemoteRolloutExecutor([url], retry=FAST, not_found_grace=0.0, poll_interval=0.01)
    [rollout] = await executor.execute([_case("late_again")], EMPTY, ExecutionContext(policy_snapshot_id="s"))
    assert "HTTP 404" in rollout.metadata["execution_error"]


def test_serving_beyond_loopback_needs_a_key(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["env", "serve", "sample", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "--api-key-env" in capsys.readouterr().err


async def test_bearer_key_guards_the_service(tmp_path: Path) -> None:
    key = "k-" + "3" * 20
    proc, url = start_cli_server(
        ["env", "serve", "sample", "--port", "0", "--state", str(tmp_path), "--api-key-env", KEY_ENV],
        env={KEY_ENV: key},
    )
    try:
        async with httpx.AsyncClient(base_url=url) as client:
            assert (await client.get("/health")).status_code == 200
            denied = await client.post("/v1/cases/query", json={"split": "test"})
            assert denied.status_code == 401
        cases = await RemoteCaseLoader(url, "test", api_key=key, limit=3).cases()
        executor = RemoteRolloutExecutor([url], api_key=key)
        rollouts = await executor.execute(cases, EMPTY, ExecutionContext(policy_snapshot_id="k"))
        assert len(rollouts) == 3 and executor.counts == {url: 3}
        wrong = RemoteRolloutExecutor([url], api_key="nope", retry=FAST)
        [failed] = await wrong.execute(cases[:1], EMPTY, ExecutionContext(policy_snapshot_id="k"))
        assert "HTTP 401" in failed.metadata["execution_error"]
    finally:
        stop(proc)


async def test_service_killed_mid_run_and_restarted(tmp_path: Path) -> None:
    """Finished executions survive the restart; the interrupted ones come back as failed cases."""
    hanging = Path(hanging_env.__file__)
    state = tmp_path / "state"
    first, url = start_cli_server([], argv=[sys.executable, str(hanging), str(state), "2"])
    port = url.rsplit(":", 1)[1]
    cases = SampleEnvironment().cases("test")[:6]
    executor = RemoteRolloutExecutor(
        [url], retry=replace(SERVICE_RETRY, base_delay=0.05, max_delay=1.0), attempts=12, long_poll=0.0
    )  # no long polls: every submit is answered before its execution starts, so none is re-sent
    run = asyncio.create_task(executor.execute(cases, EMPTY, ExecutionContext(policy_snapshot_id="kill")))
    assert first.stdout is not None
    said = sorted([(await asyncio.to_thread(first.stdout.readline)).split()[0] for _ in range(6)])
    assert said == ["done"] * 4 + ["hang"] * 2  # the service holds 4 finished and 2 running
    first.kill()
    first.wait()
    second, again = start_cli_server(["env", "serve", "sample", "--port", port, "--state", str(state)])
    try:
        assert again == url
        rollouts = await run
    finally:
        stop(first)
        stop(second)
    errors = [r.metadata.get("execution_error") for r in rollouts]
    assert all("interrupted" in str(e) for e in errors[:2]), errors
    assert errors[2:] == [None] * 4
    assert all(r.evaluation is not None for r in rollouts)


async def test_a_case_the_service_never_finishes_is_reported_and_not_trained_on(tmp_path: Path) -> None:
    hanging = Path(hanging_env.__file__)
    proc, url = start_cli_server(
        [], argv=[sys.executable, str(hanging), str(tmp_path / "state"), "1", "train"]
    )
    root = build_sample_workspace(tmp_path / "ws")
    with (root / "ovtui.toml").open("a", encoding="utf-8") as config:
        config.write(f'\n[datasets.served]\nurl = "{url}"\ntimeout = 1.5\n')
    trajectories = root / "memories" / "trajectories"
    before = set(trajectories.glob("*.md"))
    try:
        report = await Workspace(root).runs.train(
            TrainOptions(dataset="served", epochs=1, approve="all", limit=4, eval_split=None)
        )
    finally:
        stop(proc)
    first = SampleEnvironment().cases("train")[0].name
    assert len(report.errors) == 1 and report.errors[0].startswith(
        f"{first}: no result from {url} within 1.5s"
    )
    epoch = report.stage("train_epoch")
    assert epoch is not None and epoch.cases == 4 and first in epoch.failed_cases
    written = set(trajectories.glob("*.md")) - before
    assert len(written) == 3  # one trajectory per rollout that really ran; none for the lost case
