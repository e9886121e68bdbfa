"""``ovtui env serve sample`` in a real subprocess and the remote client over real sockets: paging,
execute/poll, the policy cache, snapshot round trip, several URLs, and the same training result as
a local dataset."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from server_support import start_cli_server, stop
from workspace_support import build_sample_workspace

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Experience, ExperienceSet, PolicyStatus
from ovtui.environments.sample.environment import SampleEnvironment
from ovtui.train.components.remote import RemoteCaseLoader, RemoteRolloutExecutor
from ovtui.wiring.workspace import TrainOptions, Workspace

CLOCK = re.compile(r"(_\d+)?_\d{14}(_[0-9a-f]{16})?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    state = tmp_path_factory.mktemp("env_state")
    proc, url = start_cli_server(["env", "serve", "sample", "--port", "0", "--state", str(state)])
    yield url
    stop(proc)


@pytest.fixture(scope="module")
def environment() -> SampleEnvironment:
    return SampleEnvironment()


async def test_cases_page_by_cursor(service: str, environment: SampleEnvironment) -> None:
    loader = RemoteCaseLoader(service, "train", page_size=7, batch_size=5)
    assert await loader.count() == 30
    assert await loader.cases() == environment.cases("train")
    assert [len(b) async for b in loader.batches()] == [5] * 6
    limited = RemoteCaseLoader(service, "test", page_size=4, limit=6)
    assert await limited.count() == 6
    wanted = environment.cases("test")[3].name
    filtered = RemoteCaseLoader(service, "test", filters={"names": [wanted]})
    assert [c.name for c in await filtered.cases()] == [wanted]


async def test_query_errors_name_the_field(service: str) -> None:
    async with httpx.AsyncClient(base_url=service) as client:
        bad = await client.post("/v1/cases/query", json={"split": "test", "limit": "many"})
        assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "limit"]
        missing = await client.post("/v1/cases/query", json={"split": "nope"})
        assert missing.status_code == 404 and "no split 'nope'" in missing.json()["detail"]
        unknown = await client.get("/v1/rollouts/executions/rollout_exec_missing")
        assert unknown.status_code == 404
        no_case = await client.post("/v1/rollouts/execute", json={"policy_set": {"policies": []}})
        assert no_case.status_code == 422 and no_case.json()["detail"][0]["loc"] == ["body", "case"]
        schema = (await client.get("/openapi.json")).json()
        assert {"/v1/cases/query", "/v1/rollouts/execute", "/v1/rollouts/executions/{execution_id}"} <= set(
            schema["paths"]
        )


def _policy(name: str, content: str) -> Experience:
    return Experience(
        name=name, uri=f"viking://x/{name}.md", version=1, status=PolicyStatus.PRODUCTION, content=content
    )


async def test_remote_rollouts_equal_in_process_ones(
    service: str, environment: SampleEnvironment, tmp_path: Path
) -> None:
    policy_set = Workspace(build_sample_workspace(tmp_path / "ws")).reading.experiences()
    cases = environment.cases("test")
    context = ExecutionContext(policy_snapshot_id="snap-remote-1", epoch=0)
    local = [await environment.execute(c, policy_set, context) for c in cases]
    executor = RemoteRolloutExecutor([service], max_in_flight=4)
    remote = await executor.execute(cases, policy_set, context)
    assert [r.policy_snapshot_id for r in remote] == ["snap-remote-1"] * len(cases)
    for here, there in zip(local, remote, strict=True):
        assert there.messages == here.messages
        assert there.evaluation == here.evaluation
        assert there.metadata["service"] == service
    assert executor.counts == {service: len(cases)}

    # The service cached the set by snapshot id: a request naming it may leave the policies out.
    async with httpx.AsyncClient(base_url=service) as client:
        body = {"case": cases[0].model_dump(mode="json"), "policy_set": {"policies": None}}
        body["execution_context"] = {"policy_snapshot_id": "snap-remote-1"}
        assert (await client.post("/v1/rollouts/execute", json=body)).status_code == 200
        # ?wait=S holds the answer until the execution is done: one round trip for a quick case.
        held = await client.post("/v1/rollouts/execute", json=body, params={"wait": 5})
        assert (
            held.json()["status"] == "completed"
            and held.json()["rollout"]["policy_snapshot_id"] == "snap-remote-1"
        )
        at_once = await client.post("/v1/rollouts/execute", json=body)
        assert at_once.json()["status"] in ("queued", "running") and "rollout" not in at_once.json()
        body["execution_context"] = {"policy_snapshot_id": "never-sent"}
        refused = await client.post("/v1/rollouts/execute", json=body)
        assert refused.status_code == 409 and "send the policies" in refused.json()["detail"]


async def test_several_urls_share_the_executions(
    service: str, tmp_path: Path, environment: SampleEnvironment
) -> None:
    proc, second = start_cli_server(["env", "serve", "sample", "--port", "0", "--state", str(tmp_path)])
    try:
        executor = RemoteRolloutExecutor([service, second], max_in_flight=8)
        context = ExecutionContext(policy_snapshot_id="snap-two")
        policy_set = ExperienceSet(root_uri="viking://x", policies=[_policy("greeting", "Say hello.")])
        rollouts = await executor.execute(environment.cases("train"), policy_set, context)
    finally:
        stop(proc)
    assert len(rollouts) == 30 and not any("execution_error" in r.metadata for r in rollouts)
    assert set(executor.counts) == {service, second}
    assert sum(executor.counts.values()) == 30 and min(executor.counts.values()) >= 5


async def test_train_through_the_service_equals_local_training(service: str, tmp_path: Path) -> None:
    local = build_sample_workspace(tmp_path / "local")
    remote = build_sample_workspace(tmp_path / "remote")
    with (remote / "ovtui.toml").open("a", encoding="utf-8") as config:
        config.write(f'\n[datasets.served]\nurl = "{service}"\n')
    here = await Workspace(local).runs.train(
        TrainOptions(dataset="support", epochs=2, approve="all", batch_size=8)
    )
    there = await Workspace(remote).runs.train(
        TrainOptions(dataset="served", epochs=2, approve="all", batch_size=8)
    )
    assert [s.line() for s in there.stages] == [s.line() for s in here.stages]
    final, baseline = there.stage("final_eval"), there.stage("baseline_eval")
    assert final is not None and baseline is not None and final.accuracy > baseline.accuracy
    assert there.services == {service: 10 + 30 * 2 + 10}  # validation, two epochs of train, validation
    assert f"executions: 80 on {service}" in there.summary()

    def experiences(root: Path) -> dict[str, str]:
        """The experience files with clock readings (trajectory file stamps, link times) masked."""
        folder = root / "memories/experiences"
        return {p.name: CLOCK.sub("<t>", p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.md"))}

    assert experiences(remote) == experiences(local)
