"""tau2 airline: our tools and reward against tau2's own data — every reference solution scores 1,
"do nothing" scores tau2's known 16/30 and 7/20, and the ways a conversation goes wrong."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ovtui.environments.tau2_airline.data import splits, tasks
from ovtui.environments.tau2_airline.db import AirlineDB
from ovtui.environments.tau2_airline.reward import READ_ONLY, ToolCall, score
from ovtui.environments.tau2_airline.tools import AirlineTools
from ovtui.wiring.registry import ENVIRONMENTS


def gold_calls(task_id: str) -> list[ToolCall]:
    actions = tasks()[task_id]["evaluation_criteria"]["actions"] or []
    return [ToolCall(a["name"], copy.deepcopy(a["arguments"])) for a in actions]


def gold_texts(task_id: str) -> list[str]:
    return [f"To sum up: {info}." for info in tasks()[task_id]["evaluation_criteria"]["communicate_info"]]


def writes(task_id: str) -> list[int]:
    return [i for i, c in enumerate(gold_calls(task_id)) if c.name not in READ_ONLY]


WRITING_TASKS = [t for t in tasks() if writes(t)]


def test_every_reference_solution_scores_one() -> None:
    for task_id in tasks():
        result = score(task_id, gold_calls(task_id), gold_texts(task_id), "agent_stop")
        assert result.reward == 1.0 and result.db_match, (task_id, result)
        assert result.breakdown == {"DB": 1, "COMMUNICATE": 1}


def test_doing_nothing_scores_what_tau2_reports() -> None:
    passed = {
        split: sum(score(t, [], [], "user_stop").reward for t in ids) for split, ids in splits().items()
    }
    assert passed == {"train": 16, "test": 7}
    assert {s: len(ids) for s, ids in splits().items()} == {"train": 30, "test": 20}


def test_dropping_any_write_fails_the_db_check() -> None:
    assert len(WRITING_TASKS) >= 20
    for task_id in WRITING_TASKS:
        for index in writes(task_id):
            calls = gold_calls(task_id)
            del calls[index]
            result = score(task_id, calls, gold_texts(task_id), "user_stop")
            assert result.breakdown["DB"] == 0 and result.reward == 0, (task_id, index)


def test_an_extra_write_fails_the_db_check() -> None:
    for task_id in WRITING_TASKS[:10]:
        user = next(
            (c.arguments["user_id"] for c in gold_calls(task_id) if "user_id" in c.arguments), "mia_li_3668"
        )
        calls = [*gold_calls(task_id), ToolCall("send_certificate", {"user_id": user, "amount": 50})]
        assert score(task_id, calls, gold_texts(task_id), "user_stop").reward == 0, task_id


def _swap(arguments: dict[str, Any]) -> bool:
    """Swap two values of the same type that differ; False when no such pair exists."""
    keys = list(arguments)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            va, vb = arguments[a], arguments[b]
            if type(va) is type(vb) and va != vb and not isinstance(va, list | dict):
                arguments[a], arguments[b] = vb, va
                return True
    return False


def test_swapped_arguments_fail_the_db_check() -> None:
    swapped = 0
    for task_id in WRITING_TASKS:
        calls = gold_calls(task_id)
        index = writes(task_id)[-1]
        if not _swap(calls[index].arguments):
            continue
        swapped += 1
        result = score(task_id, calls, gold_texts(task_id), "user_stop")
        assert result.reward == 0, (task_id, calls[index])
    assert swapped >= 10


def test_reordered_reads_and_refused_calls_change_nothing() -> None:
    for task_id in WRITING_TASKS:
        calls = gold_calls(task_id)
        reads = [c for c in calls if c.name in READ_ONLY]
        refused = [
            ToolCall("cancel_reservation", {"reservation_id": "NOSUCH"}),
            ToolCall("update_reservation_baggages", {"reservation_id": "NOSUCH"}),
            ToolCall("book_reservation", {"user_id": "mia_li_3668"}),
            ToolCall("no_such_tool", {}),
        ]
        shuffled = [*refused, *[c for c in calls if c.name not in READ_ONLY], *reversed(reads), *reads]
        result = score(task_id, shuffled, gold_texts(task_id), "agent_stop")
        assert result.reward == 1.0, task_id


def test_ending_without_a_stop_scores_zero() -> None:
    task_id = WRITING_TASKS[0]
    result = score(task_id, gold_calls(task_id), gold_texts(task_id), "max_turns")
    assert result.reward == 0.0 and result.db_match


def test_communicate_ignores_case_and_commas_in_assistant_text() -> None:
    task_id = next(t for t in tasks() if tasks()[t]["evaluation_criteria"]["communicate_info"])
    info = tasks()[task_id]["evaluation_criteria"]["communicate_info"][0]
    calls = gold_calls(task_id)
    assert score(task_id, calls, [], "user_stop").breakdown["COMMUNICATE"] == 0
    assert score(task_id, calls, [info.upper()], "user_stop").reward == 1.0
    if info.isdigit() and len(info) > 3:
        with_comma = f"{int(info):,}"
        assert score(task_id, calls, [f"Total {with_comma}"], "user_stop").reward == 1.0


def test_booking_pays_moves_seats_and_uses_up_a_certificate() -> None:
    db = AirlineDB()
    tools = AirlineTools(db)
    user = json.loads(tools.call("get_user_details", {"user_id": "mia_li_3668"}).output)
    certificate = next(k for k, v in user["payment_methods"].items() if v["source"] == "certificate")
    amount = user["payment_methods"][certificate]["amount"]
    flights = json.loads(
        tools.call(
            "search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}
        ).output
    )
    flight = flights[0]
    fare = flight["prices"]["economy"]
    card = next(k for k, v in user["payment_methods"].items() if v["source"] == "credit_card")
    payments: list[dict[str, Any]] = [
        {"payment_id": certificate, "amount": amount},
        {"payment_id": card, "amount": 1},
    ]
    booking: dict[str, Any] = {
        "user_id": "mia_li_3668",
        "origin": "JFK",
        "destination": "SEA",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [{"flight_number": flight["flight_number"], "date": "2024-05-20"}],
        "passengers": [{"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"}],
        "payment_methods": payments,
        "total_baggages": 1,
        "nonfree_baggages": 1,
        "insurance": "yes",
    }
    wrong = tools.call("book_reservation", booking)
    assert not wrong.ok and "does not add up" in wrong.output
    assert db.same_as(AirlineDB())  # a refused booking changed nothing
    payments[1]["amount"] = fare + 30 + 50 - amount
    done = tools.call("book_reservation", booking)
    assert done.ok, done.output
    reservation = json.loads(done.output)
    assert reservation["reservation_id"] == "HATHAT" and reservation["created_at"] == "2024-05-15T15:00:00"
    after = json.loads(tools.call("get_user_details", {"user_id": "mia_li_3668"}).output)
    assert certificate not in after["payment_methods"] and "HATHAT" in after["reservations"]
    again = json.loads(
        tools.call(
            "search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}
        ).output
    )
    assert again[0]["available_seats"]["economy"] == flight["available_seats"]["economy"] - 1
    cancelled = json.loads(tools.call("cancel_reservation", {"reservation_id": "hathat"}).output)
    assert cancelled["status"] == "cancelled" and cancelled["payment_history"][-1]["amount"] == -(
        fare + 30 + 50 - amount
    )
    assert tools.call("send_certificate", {"user_id": "mia_li_3668", "amount": 5}).output.startswith(
        "Certificate certificate_3221322 added"
    )


def test_zero_cost_update_records_no_payment_but_needs_a_usable_method() -> None:
    db = AirlineDB()
    tools = AirlineTools(db)
    reservation = json.loads(tools.call("get_reservation_details", {"reservation_id": "4WQ150"}).output)
    user = json.loads(tools.call("get_user_details", {"user_id": reservation["user_id"]}).output)
    methods = user["payment_methods"]
    card = next(k for k, v in methods.items() if v["source"] != "certificate")
    same = {
        "reservation_id": "4WQ150",
        "total_baggages": reservation["total_baggages"] + 1,
        "nonfree_baggages": reservation["nonfree_baggages"],
    }
    ok = json.loads(tools.call("update_reservation_baggages", {**same, "payment_id": card}).output)
    assert ok["payment_history"] == reservation["payment_history"]
    assert tools.call("update_reservation_baggages", {**same, "payment_id": "nope"}).output == (
        "Error: Payment method not found"
    )


def test_env_score_command_scores_lines_in_order_and_names_a_bad_line(tmp_path: Path) -> None:
    task_id = WRITING_TASKS[0]
    good = {
        "rollout_id": "r1",
        "task_id": task_id,
        "tool_calls": [
            {"name": c.name, "arguments": c.arguments, "requestor": "assistant"} for c in gold_calls(task_id)
        ],
        "assistant_texts": gold_texts(task_id),
        "termination": "user_stop",
        "extra": "ignored",
    }
    nothing = {"task_id": "1", "tool_calls": [], "assistant_texts": [], "termination": "agent_stop"}
    lines = [json.dumps(good), "{not json", json.dumps({**nothing, "task_id": "999"}), json.dumps(nothing)]
    path = tmp_path / "rollouts.jsonl"
    path.write_text("\n".join(lines) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "ovtui", "env", "score", "tau2-airline", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert out[0] == {
        "rollout_id": "r1",
        "task_id": task_id,
        "reward": 1.0,
        "reward_breakdown": {"DB": 1, "COMMUNICATE": 1},
        "db_match": True,
    }
    assert out[1]["line"] == 2 and out[2]["line"] == 3 and "task_id" in out[2]["error"]
    assert out[3]["task_id"] == "1" and out[3]["reward"] == 1.0 and "rollout_id" not in out[3]
    assert f"{path}:2:" in done.stderr and f"{path}:3: task_id" in done.stderr


def test_env_score_refuses_a_termination_that_is_no_termination_reason(tmp_path: Path) -> None:
    nothing = {"task_id": "1", "tool_calls": [], "assistant_texts": []}
    records = [
        {**nothing, "termination": "banana"},
        nothing,
        {**nothing, "termination": 7},
        {**nothing, "termination": "max_steps"},  # tau2's own turn limit: scored 0, not refused
    ]
    path = tmp_path / "rollouts.jsonl"
    path.write_text("\n".join([*map(json.dumps, records), "[" * 100_000]) + "\n")
    done = subprocess.run(
        [sys.executable, "-m", "ovtui", "env", "score", "tau2-airline", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    allowed = "one of user_stop, agent_stop, max_turns, max_steps, timeout, too_many_errors, agent_error"
    problems = done.stderr.splitlines()
    assert problems[0].startswith(f"{path}:1: termination: 'banana' is not a termination reason; {allowed}")
    assert problems[1].startswith(f"{path}:2: termination: missing; {allowed}")
    assert problems[2].startswith(f"{path}:3: termination: must be a string, not int; {allowed}")
    assert problems[3].startswith(
        f"{path}:5: JSON nested deeper than 200 levels"
    )  # the bounded reader's line
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert [o.get("line") for o in out] == [1, 2, 3, None, 5]
    assert out[3]["reward"] == 0.0 and "error" not in out[3]


def test_cases_follow_tau2_splits() -> None:
    environment = ENVIRONMENTS.get("tau2-airline")(None)
    train = environment.cases("train")
    assert [c.input["task_id"] for c in train] == splits()["train"]
    assert train[0].rubric.criteria[0].name == "tau2_reward"
    with pytest.raises(Exception, match="no split 'dev'"):
        environment.cases("dev")
