"""The remote client against a service that misbehaves, over real sockets: every bad answer fails
the one case (or the one case query) it belongs to, in one line naming the service, the route and
what was wrong; the good cases of the same batch run."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hostile_service_support import DRIP_EVERY, EXECUTE_BEHAVIOURS, HostileService, hostile_service

from ovtui.core.bounds import MAX_SERVICE_ANSWER_BYTES
from ovtui.core.context import ExecutionContext
from ovtui.core.domain import EXECUTION_ERROR, ExperienceSet
from ovtui.train.components.remote import RemoteCaseLoader, RemoteRolloutExecutor
from ovtui.train.components.remote_transport import SERVICE_RETRY, RemoteError

FAST = replace(SERVICE_RETRY, base_delay=0.01, max_delay=0.05)
EMPTY = ExperienceSet(root_uri="viking://user/default/memories/experiences")
DEADLINE = 1.0  # seconds for one request; the drip would go on for ever


async def test_each_bad_answer_fails_its_case_and_names_route_and_field() -> None:
    behaviours = list(EXECUTE_BEHAVIOURS)
    service = HostileService(split_size=len(behaviours) + 2)
    cases = service.cases("train")
    service.execute = {case.name: b for case, b in zip(cases, behaviours, strict=False)}
    with hostile_service(service) as url:
        executor = RemoteRolloutExecutor([url], retry=FAST, request_timeout=DEADLINE, poll_interval=0.01)
        rollouts = await executor.execute(cases, EMPTY, ExecutionContext(policy_snapshot_id="s"))
    errors = {r.case.name: str(r.metadata.get(EXECUTION_ERROR, "")) for r in rollouts}
    said = {service.execute.get(name, "good"): error for name, error in errors.items()}
    execute, poll = f"{url}/v1/rollouts/execute", f"{url}/v1/rollouts/executions/exec-"

    assert said["not_json"].startswith(f"{execute}: the answer is not an execution: [answer] Invalid JSON")
    assert said["wrong_shape"].startswith(f"{execute}: the answer is not an execution: [status] Input should")
    assert (
        said["poll_not_json"].startswith(poll)
        and "not an execution: [answer] Invalid JSON" in said["poll_not_json"]
    )
    assert said["drip"] == f"{execute}: the answer did not end within {DEADLINE:g}s"
    assert said["huge"] == f"{execute}: the answer is more than the {MAX_SERVICE_ANSWER_BYTES} byte limit"
    assert said["lying_length"] == (
        f"{execute}: the answer is 200000000 bytes, more than the {MAX_SERVICE_ANSWER_BYTES} byte limit"
    )
    assert said["storm"] == f"{execute}: gave up after 8 tries (HTTP 500: overloaded)"
    other = service.environment.cases("test")[0].name
    assert said["other_case"] == (
        f"{url} answered a rollout of case {other!r}, not of {service_name(service, 'other_case')!r}"
    )
    assert all("\n" not in error for error in errors.values())
    good = [r for r in rollouts if r.case.name not in service.execute]
    assert len(good) == 2 and all(EXECUTION_ERROR not in r.metadata and r.evaluation for r in good)
    assert executor.failures == {url: len(behaviours)} and executor.counts == {url: 2}
    # The drip was cut at the deadline (a few bytes in, with room for a loaded machine's late
    # timers), the huge body soon after the limit.
    assert service.bytes_sent[service_name(service, "drip")] < 5 * DEADLINE / DRIP_EVERY
    assert service.bytes_sent[service_name(service, "huge")] < 100 * 1000 * 1000


def service_name(service: HostileService, behaviour: str) -> str:
    return next(name for name, b in service.execute.items() if b == behaviour)


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        ("endless", "still a next_cursor after 5 pages (5 cases): stopped at max_pages = 5"),
        ("cycle", "page 3 gave next_cursor 'a' again (page 1 gave it first): the service pages in a circle"),
        (
            "not_json",
            "the answer is not a case page: [answer] Invalid JSON: expected value at line 1 column 1",
        ),
        ("wrong_shape", "the answer is not a case page: [cases.0.name] Input should be a valid string"),
        ("drip", f"the answer did not end within {DEADLINE:g}s"),
        ("huge", f"the answer is more than the {MAX_SERVICE_ANSWER_BYTES} byte limit"),
    ],
)
async def test_a_case_query_that_misbehaves_is_one_error(behaviour: str, said: str) -> None:
    service = HostileService(query=behaviour)
    with hostile_service(service) as url:
        loader = RemoteCaseLoader(url, "train", max_pages=5, request_timeout=DEADLINE, retry=FAST)
        with pytest.raises(RemoteError) as raised:
            await loader.cases()
    assert str(raised.value).startswith(f"{url}/v1/cases/query: {said}")
    assert service.hits["query"] <= 5  # paging stopped where it said
