"""What the offline backend learns from committed conversations, over the real session API on
127.0.0.1 with ``[review] policy = "ask"``: a one-call conversation and one whose tool failed each
park a plan in Review whose experience names the calls (or the failure) and none of the user's
values; three sessions of one kind become one experience, not three."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from server_support import threaded_server
from session_support import commit_and_wait, ok
from workspace_support import build_sample_workspace

from ovtui.core.domain import PolicyPlanItem
from ovtui.core.fileformat import parse_memory
from ovtui.plugins.wording.sections import parse_sections
from ovtui.servers.openviking.app import create_session_app
from ovtui.wiring.workspace import Workspace

ANA = ("Ana Ruiz", "C-4821", "ana.ruiz@example.com")
USER_VALUES = ("Ana", "Ruiz", "C-4821", "4821", "ana.ruiz@example.com", "example.com")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[httpx.Client, Workspace]]:
    """The session API over a fresh sample workspace whose review policy is "ask" (its default)."""
    root = build_sample_workspace(tmp_path / "ws")
    assert 'policy = "ask"' in (root / "ovtui.toml").read_text()
    ws = Workspace(root)
    with (
        threaded_server(create_session_app(ws, watch_inbox=False)) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        yield client, ws


def tool(name: str, args: dict[str, Any], output: str, status: str = "completed") -> dict[str, Any]:
    part = {"type": "tool", "tool_id": name, "tool_name": name, "tool_input": args, "tool_output": output}
    return {"role": "assistant", "parts": [{**part, "tool_status": status}]}


def email_change(who: tuple[str, str, str]) -> list[dict[str, Any]]:
    name, customer, email = who
    return [
        {
            "role": "user",
            "content": f"Hi, my name is {name}. I prefer short answers. Please change the email of"
            f" customer {customer} to {email}.",
        },
        tool("update_email", {"customer_id": customer, "email": email}, f'{{"email": "{email}"}}'),
        {"role": "assistant", "content": f"Done, {name.split()[0]}: the email is now {email}."},
    ]


def failed_cancel(who: tuple[str, str, str]) -> list[dict[str, Any]]:
    name, customer, email = who
    return [
        {"role": "user", "content": f"Please cancel the booking of {name} ({email}), customer {customer}."},
        tool(
            "cancel_booking",
            {"customer_id": customer, "email": email},
            f"Error: booking not found for {customer} <{email}>",
            "error",
        ),
        {"role": "assistant", "content": "I could not find a booking to cancel."},
    ]


def commit(client: httpx.Client, session_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    ok(client.post("/api/v1/sessions", json={"session_id": session_id}))
    ok(client.post(f"/api/v1/sessions/{session_id}/messages/batch", json={"messages": messages}))
    task = commit_and_wait(client, session_id)
    assert task["status"] == "completed", task
    return task


def parked_item(ws: Workspace, task: dict[str, Any]) -> tuple[str, PolicyPlanItem]:
    """The one experience item of the one plan the commit parked for Review."""
    [plan_id] = task["result"]["pending_plans"]
    [item] = [i for i in ws.review.pending_plan(plan_id).plan.items if i.memory_type == "experiences"]
    assert item.after_content is not None
    return plan_id, item


def assert_no_user_values(text: str) -> None:
    for value in USER_VALUES:
        assert value not in text, (value, text)


def test_a_one_call_conversation_parks_the_call_that_answered_it(
    served: tuple[httpx.Client, Workspace],
) -> None:
    client, ws = served
    plan_id, item = parked_item(ws, commit(client, "one-call", email_change(ANA)))
    assert item.target_name == "change_email_customer"
    assert item.after_content is not None
    approach = parse_sections(item.after_content).approach
    assert approach == [
        '- For a request like "change email customer": update_email(customer_id, email) answered it'
    ]
    assert_no_user_values(item.after_content)
    # the example shows the request alone: the user's statements are their memories, not the task's
    example = '- Example request: "Please change the email of customer <value> to <value>"'
    assert example in parse_sections(item.after_content).situation
    assert "prefer" not in item.after_content
    # its case says why it is one (OpenViking requires evidence): the tools, no values
    [case] = ws.root.joinpath("memories/cases").glob("*.md")
    evidence = parse_memory(case.read_text(encoding="utf-8")).fields["evidence"]
    said = "In a committed session the agent handled the request with update_email"
    assert evidence == f"{said}; every tool call completed."
    # the person approves it in Review as usual and it becomes the experience
    ws.review.decide_all(plan_id, "approved")
    applied = asyncio.run(ws.review.apply_pending(plan_id))
    [uri] = applied.written_uris
    written = ws.reading.path_for(uri).read_text(encoding="utf-8")
    assert "update_email(customer_id, email) answered it" in written
    assert_no_user_values(written)


def test_a_tool_error_parks_what_the_agent_did_after_it(served: tuple[httpx.Client, Workspace]) -> None:
    client, ws = served
    _, item = parked_item(ws, commit(client, "tool-error", failed_cancel(ANA)))
    assert item.target_name == "cancel_booking_customer"
    assert item.after_content is not None
    sections = parse_sections(item.after_content)
    assert sections.reflect == [
        '- When cancel_booking failed with "booking not found",'
        " the agent then replied without another tool call"
    ]
    assert sections.approach == []
    assert_no_user_values(item.after_content)
    [case] = ws.root.joinpath("memories/cases").glob("*.md")
    assert parse_memory(case.read_text(encoding="utf-8")).fields["evidence"].endswith("; a tool call failed.")
    # the run's trajectory (the learner's text) tells the failure as the tool answered it, without
    # the user's values
    [trajectory_uri] = item.evidence_trajectory_uris
    trajectory = parse_memory(ws.reading.path_for(trajectory_uri).read_text(encoding="utf-8")).content
    assert "1. cancel_booking(customer_id, email) failed: Error: booking not found for" in trajectory
    assert_no_user_values(trajectory)


def test_three_sessions_of_one_kind_are_one_experience(served: tuple[httpx.Client, Workspace]) -> None:
    client, ws = served
    people = [ANA, ("Bo Lind", "C-1002", "bo@example.org"), ("Cy Park", "C-7310", "cy.park@mail.example.net")]
    plans = [
        parked_item(ws, commit(client, f"same-{i}", email_change(who)))[0] for i, who in enumerate(people)
    ]
    # three parked plans for the same experience; re-planned together they are one item, one lesson
    result = asyncio.run(ws.review.replan(plans))
    assert result.plan_id is not None and result.items == 1
    [item] = ws.review.pending_plan(result.plan_id).plan.items
    assert item.target_name == "change_email_customer" and item.after_content is not None
    assert len(parse_sections(item.after_content).approach) == 1
    for _, customer, email in people:
        assert customer not in item.after_content and email not in item.after_content
    ws.review.decide_all(result.plan_id, "approved")
    asyncio.run(ws.review.apply_pending(result.plan_id))
    experiences = list((ws.root / "memories/experiences").glob("change_email*.md"))
    assert [p.name for p in experiences] == ["change_email_customer.md"]
    # a fourth session of the same kind teaches nothing new: no plan waits for a person
    again = commit(client, "same-3", email_change(("Di Moss", "C-5555", "di@example.com")))
    assert again["result"]["pending_plans"] == [] and again["result"]["errors"] == []
    assert again["result"]["memories_extracted"]["cases"] == 1  # its case still went to the trainer


def test_the_trajectory_keeps_the_task_not_the_person(served: tuple[httpx.Client, Workspace]) -> None:
    """A trajectory's ``task_query`` is read back by later agents and matched by retrieval: it
    keeps the request, not who asked (name, e-mail, what they prefer, the values they passed)."""
    client, ws = served
    commit(client, "whose-task", email_change(ANA))
    [path] = (ws.root / "memories/trajectories").glob("change_email_customer_*.md")
    query = str(parse_memory(path.read_text()).fields["task_query"])
    assert query == "Please change the email of customer <value> to <value>.", query
    assert_no_user_values(query)
