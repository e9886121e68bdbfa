"""The tau2 airline agent and LLM user simulator against the local fake OpenAI server (the real
``openai`` client), in process and through ``ovtui env serve tau2-airline --config``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_support import start_cli_server, stop, threaded_server

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Experience, ExperienceSet, PolicyStatus
from ovtui.environments.tau2_airline.data import tasks
from ovtui.environments.tau2_airline.environment import AirlineEnvironment, case_for
from ovtui.servers.benchmark import create_env_app
from ovtui.storage.jobs import JobStore
from ovtui.testing.helpers import KEY_ENV, SECRET_KEY, make_client
from ovtui.testing.openai_server import FakeOpenAIServer, RecordedRequest, Reply
from ovtui.train.components.remote import RemoteRolloutExecutor

TASK = "14"  # cancel one reservation, book another (certificate, two gift cards, a card)
EXPERIENCE = "Always read the reservation back to the user before cancelling it."
POLICIES = ExperienceSet(
    root_uri="viking://user/default/memories/experiences",
    policies=[
        Experience(
            name="cancel_with_care",
            uri="viking://user/default/memories/experiences/cancel_with_care.md",
            version=1,
            status=PolicyStatus.PRODUCTION,
            content=f"## Situation\nA user wants to cancel a reservation and book.\n## Reflect\n{EXPERIENCE}",
        )
    ],
)


def is_simulator(request: RecordedRequest) -> bool:
    return str(request.messages[0].get("content", "")).startswith("You play a customer")


def scripted(actions: list[dict[str, Any]], closing: str) -> Any:
    """Agent: the given tool calls one per turn, then ``closing``; simulator: asks, then stops."""

    def respond(request: RecordedRequest) -> Reply:
        if is_simulator(request):
            said = sum(1 for m in request.messages if m["role"] == "assistant")
            return Reply.text(
                "Please cancel K1NW8N and book the new trip." if said == 0 else "Thanks! ###STOP###"
            )
        done = sum(1 for m in request.messages if m["role"] == "tool")
        if done < len(actions):
            return Reply.tools((actions[done]["name"], actions[done]["arguments"]))
        return Reply.text(closing)

    return respond


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    monkeypatch.setenv(KEY_ENV, SECRET_KEY)
    with FakeOpenAIServer() as server:
        yield server


def gold() -> list[dict[str, Any]]:
    return list(tasks()[TASK]["evaluation_criteria"]["actions"])


async def test_the_reference_conversation_earns_the_reward(fake: FakeOpenAIServer) -> None:
    closing = "All done: refund 327, certificate 1000 used, and 1,786 charged."
    fake.respond_with(scripted(gold(), closing))
    environment = AirlineEnvironment(make_client(fake), make_client(fake))
    case = case_for(TASK, "train")
    rollout = await environment.execute(case, POLICIES, ExecutionContext(policy_snapshot_id="snap-t"))

    assert rollout.metadata["termination"] == "user_stop"
    assert rollout.evaluation is not None and rollout.evaluation.passed, rollout.evaluation
    assert rollout.evaluation.metadata["reward_breakdown"] == {"DB": 1, "COMMUNICATE": 1}
    assert rollout.policy_snapshot_id == "snap-t"
    tools = [p for m in rollout.messages for p in m.tool_parts]
    assert [t.tool_name for t in tools] == ["cancel_reservation", "book_reservation"]
    assert all(t.tool_status == "completed" for t in tools)
    assert json.loads(tools[0].tool_output)["status"] == "cancelled"

    agent_calls = [r for r in fake.chat_requests if not is_simulator(r)]
    simulator_calls = [r for r in fake.chat_requests if is_simulator(r)]
    assert len(agent_calls) == 3 and len(simulator_calls) == 2
    system = agent_calls[0].messages[0]["content"]
    assert "# Airline Agent Policy" in system and EXPERIENCE in system
    assert {t["function"]["name"] for t in agent_calls[0].body["tools"]} >= {"book_reservation", "calculate"}
    assert (
        agent_calls[1].messages[-1]["role"] == "tool"
        and "cancelled" in agent_calls[1].messages[-1]["content"]
    )
    persona = simulator_calls[0].messages[0]["content"]
    reason = case.input["user_scenario"]["reason_for_call"].strip().splitlines()[0]
    assert reason in persona and "Airline Agent Policy" not in persona
    assert simulator_calls[1].messages[-1] == {"role": "user", "content": closing}
    await environment.aclose()  # both models' connections (the workspace's close calls it)
    assert await asyncio.to_thread(fake.wait_for_open_connections, 0)


async def test_text_beside_a_tool_call_counts_as_communicated(fake: FakeOpenAIServer) -> None:
    """tau2 lets an assistant message carry text and tool calls; COMMUNICATE reads that text too."""
    said = "I will refund 327, use the 1000 certificate and charge 1,786."

    def respond(request: RecordedRequest) -> Reply:
        if is_simulator(request) or sum(1 for m in request.messages if m["role"] == "tool") != 0:
            reply: Reply = scripted(gold(), "Done.")(request)
            return reply
        first = Reply.tools((gold()[0]["name"], gold()[0]["arguments"]))
        return Reply(content=said, tool_calls=first.tool_calls, finish_reason="tool_calls")

    fake.respond_with(respond)
    environment = AirlineEnvironment(make_client(fake), make_client(fake))
    rollout = await environment.execute(case_for(TASK, "train"), POLICIES, ExecutionContext("s"))
    assert rollout.evaluation is not None
    assert rollout.evaluation.metadata["reward_breakdown"] == {"DB": 1, "COMMUNICATE": 1}
    texts = [p.text for m in rollout.messages if m.role == "assistant" for p in m.parts if p.type == "text"]
    assert said in texts


async def test_a_wrong_write_and_a_runaway_agent_score_zero(fake: FakeOpenAIServer) -> None:
    wrong = [{"name": "cancel_reservation", "arguments": {"reservation_id": "4WQ150"}}]
    fake.respond_with(scripted(wrong, "Done: refund 327, 1000 and 1786."))
    environment = AirlineEnvironment(make_client(fake), make_client(fake), max_turns=3)
    rollout = await environment.execute(case_for(TASK, "train"), POLICIES, ExecutionContext("s"))
    assert rollout.metadata["termination"] == "user_stop"
    assert rollout.evaluation is not None
    assert rollout.evaluation.metadata["reward_breakdown"] == {"DB": 0, "COMMUNICATE": 1}

    endless = [{"name": "get_user_details", "arguments": {"user_id": "mohamed_silva_9265"}}] * 10
    fake.respond_with(scripted(endless, "unused"))
    rollout = await environment.execute(case_for(TASK, "train"), POLICIES, ExecutionContext("s"))
    assert rollout.metadata["termination"] == "max_turns"
    assert rollout.evaluation is not None and rollout.evaluation.score == 0.0


async def test_tau2_through_the_service(fake: FakeOpenAIServer, tmp_path: Path) -> None:
    fake.respond_with(scripted(gold(), "Refund 327, certificate 1000, charge 1786."))
    config = tmp_path / "tau2.toml"
    config.write_text(
        f'[llm]\nbackend = "openai"\nbase_url = "{fake.base_url}"\nmodel = "fake-agent"\n'
        f'api_key_env = "{KEY_ENV}"\n\n[user_simulator]\nbackend = "openai"\nbase_url = "{fake.base_url}"\n'
        f'model = "fake-user"\napi_key_env = "{KEY_ENV}"\n'
    )
    proc, url = start_cli_server(
        [
            "env",
            "serve",
            "tau2-airline",
            "--port",
            "0",
            "--state",
            str(tmp_path / "s"),
            "--config",
            str(config),
        ],
        env={KEY_ENV: SECRET_KEY},
    )
    try:
        executor = RemoteRolloutExecutor([url])
        [rollout] = await executor.execute([case_for(TASK, "train")], POLICIES, ExecutionContext("snap-r"))
    finally:
        stop(proc)
    assert rollout.evaluation is not None and rollout.evaluation.passed, rollout.metadata
    assert {r.body["model"] for r in fake.chat_requests} == {"fake-agent", "fake-user"}
    assert SECRET_KEY not in json.dumps(rollout.model_dump(mode="json"))


async def test_the_service_closes_its_models_connections_as_it_stops(
    fake: FakeOpenAIServer, tmp_path: Path
) -> None:
    """``ovtui env serve``'s app: a rollout's models keep their connections alive while it serves,
    and its shutdown closes them in the loop that opened them (left open they fail in the next
    loop and are garbage at exit)."""
    fake.respond_with(scripted(gold(), "Refund 327, certificate 1000, charge 1786."))
    environment = AirlineEnvironment(make_client(fake), make_client(fake))
    app = create_env_app(environment, JobStore(tmp_path / "s", prefix="rollout_exec_"), workers=1)
    with threaded_server(app) as url:
        executor = RemoteRolloutExecutor([url])
        [rollout] = await executor.execute([case_for(TASK, "train")], POLICIES, ExecutionContext("snap-c"))
        assert rollout.evaluation is not None and rollout.evaluation.passed, rollout.metadata
        assert fake.open_connections > 0
    assert await asyncio.to_thread(fake.wait_for_open_connections, 0)
