"""tau2-bench's exact semantics, pinned case by case: which arguments tau2 coerces (where it builds
one of its pydantic models) and which it stores raw, calls that fail part-way, unexpected
arguments, the replay rules (reads, unknown tools, user calls) and the "not evaluated" DB verdict.
Each expectation follows from reading tau2's tools, environment and evaluator code."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ovtui.environments.tau2_airline.data import tasks
from ovtui.environments.tau2_airline.db import AirlineDB
from ovtui.environments.tau2_airline.reward import ToolCall, score, score_criteria
from ovtui.environments.tau2_airline.tools import AirlineTools


def gold(task_id: str) -> list[ToolCall]:
    actions = tasks()[task_id]["evaluation_criteria"]["actions"]
    return [ToolCall(a["name"], copy.deepcopy(a["arguments"])) for a in actions]


def texts(task_id: str) -> list[str]:
    return list(tasks()[task_id]["evaluation_criteria"]["communicate_info"])


def with_changed(task_id: str, tool: str, **changes: Any) -> list[ToolCall]:
    calls = gold(task_id)
    index = next(i for i, c in enumerate(calls) if c.name == tool)
    calls[index] = ToolCall(tool, {**calls[index].arguments, **changes})
    return calls


def reward(task_id: str, calls: list[ToolCall]) -> float:
    return score(task_id, calls, texts(task_id), "agent_stop").reward


def booking_payment(amount: Any) -> list[dict[str, Any]]:
    return [{"payment_id": "certificate_8045380", "amount": amount}]


# Task 8 books one economy seat pair for $348 paid by a certificate; task 12 adds a free bag.
@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"payment_methods": booking_payment("348")}, 1.0),  # Payment.amount: int, "348" → 348
        ({"payment_methods": booking_payment(348.0)}, 1.0),
        ({"payment_methods": booking_payment(347.5)}, 0.0),  # not a whole number: refused
        ({"total_baggages": "0"}, 1.0),  # Reservation.total_baggages: int
        ({"nonfree_baggages": 0.0}, 1.0),  # 50 * 0.0 adds up; the reservation stores 0
        ({"nonfree_baggages": "0"}, 0.0),  # tau2 computes 50 * "0" raw: a string, then a TypeError
        ({"insurance": "No"}, 0.0),  # a Literal: no case folding
        ({"note": "window seat"}, 0.0),  # an unexpected argument fails the call like Python's
    ],
)
def test_booking_coerces_where_tau2_builds_a_model(changes: dict[str, Any], expected: float) -> None:
    assert reward("8", with_changed("8", "book_reservation", **changes)) == expected


def test_passenger_fields_must_be_strings_not_numbers() -> None:
    calls = gold("8")
    calls[-1].arguments["passengers"][0]["dob"] = 19571005
    assert reward("8", calls) == 0.0


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({}, 1.0),
        ({"total_baggages": 2.0}, 0.0),  # stored raw by the update: 2.0 is not the reference's 2
        ({"total_baggages": "2"}, 0.0),
        ({"nonfree_baggages": 0.0}, 0.0),
        ({"nonfree_baggages": "0"}, 0.0),  # "0" - 0 fails: nothing changes, the bag is missing
    ],
)
def test_a_baggage_update_stores_its_numbers_raw(changes: dict[str, Any], expected: float) -> None:
    assert reward("12", with_changed("12", "update_reservation_baggages", **changes)) == expected


def test_a_certificate_amount_becomes_a_float() -> None:
    as_text, as_number = AirlineDB(), AirlineDB()
    assert AirlineTools(as_text).call("send_certificate", {"user_id": "mia_li_3668", "amount": "50"}).ok
    assert AirlineTools(as_number).call("send_certificate", {"user_id": "mia_li_3668", "amount": 50}).ok
    assert as_text.same_as(as_number)
    stored = as_number.peek("users", "mia_li_3668")["payment_methods"]["certificate_3221322"]["amount"]
    assert stored == 50.0 and isinstance(stored, float)
    refused = AirlineDB()
    result = AirlineTools(refused).call("send_certificate", {"user_id": "mia_li_3668", "amount": "fifty"})
    assert not result.ok and refused.same_as(AirlineDB())


def _user_methods(db: AirlineDB, user_id: str) -> dict[str, Any]:
    methods: dict[str, Any] = db.peek("users", user_id)["payment_methods"]
    return methods


def test_a_gift_card_is_debited_before_a_fractional_update_payment_fails() -> None:
    db = AirlineDB()
    tools = AirlineTools(db)
    reservation = json.loads(tools.call("get_reservation_details", {"reservation_id": "R9QDGB"}).output)
    before = _user_methods(db, "mei_hernandez_8984")["gift_card_5309492"]["amount"]
    paid_bags = reservation["nonfree_baggages"] + 0.25  # $12.50: Payment.amount is an int
    result = tools.call(
        "update_reservation_baggages",
        {
            "reservation_id": "R9QDGB",
            "total_baggages": 5,
            "nonfree_baggages": paid_bags,
            "payment_id": "gift_card_5309492",
        },
    )
    assert not result.ok
    after = _user_methods(db, "mei_hernandez_8984")["gift_card_5309492"]["amount"]
    assert after == before - 12.5
    assert db.peek("reservations", "R9QDGB") == reservation  # the reservation itself is untouched


def test_a_certificate_named_twice_fails_after_the_earlier_debits() -> None:
    db = AirlineDB()
    tools = AirlineTools(db)
    flight = json.loads(
        tools.call(
            "search_direct_flight", {"origin": "JFK", "destination": "SEA", "date": "2024-05-20"}
        ).output
    )[0]
    fare = flight["prices"]["economy"]
    payments = [
        {"payment_id": "gift_card_5309492", "amount": 10},
        {"payment_id": "certificate_7502997", "amount": 1},
        {"payment_id": "certificate_7502997", "amount": fare - 11},
    ]
    result = tools.call(
        "book_reservation",
        {
            "user_id": "mei_hernandez_8984",
            "origin": "JFK",
            "destination": "SEA",
            "flight_type": "one_way",
            "cabin": "economy",
            "flights": [{"flight_number": flight["flight_number"], "date": "2024-05-20"}],
            "passengers": [{"first_name": "Mei", "last_name": "Hernandez", "dob": "1981-08-01"}],
            "payment_methods": payments,
            "total_baggages": 0,
            "nonfree_baggages": 0,
            "insurance": "no",
        },
    )
    assert not result.ok and "KeyError" in result.output
    methods = _user_methods(db, "mei_hernandez_8984")
    assert methods["gift_card_5309492"]["amount"] == 98.0 - 10 and "certificate_7502997" not in methods
    assert not db.has("reservations", "HATHAT")
    seats = db.peek("flights", flight["flight_number"])["dates"]["2024-05-20"]["available_seats"]
    assert seats == flight["available_seats"]


def test_a_flight_update_with_no_flights_takes_any_cabin_and_refunds() -> None:
    db = AirlineDB()
    tools = AirlineTools(db)
    before = json.loads(tools.call("get_reservation_details", {"reservation_id": "R9QDGB"}).output)
    result = tools.call(
        "update_reservation_flights",
        {"reservation_id": "R9QDGB", "cabin": "first", "flights": [], "payment_id": "credit_card_2140654"},
    )
    assert result.ok, result.output
    after = json.loads(result.output)
    paid = sum(leg["price"] for leg in before["flights"]) * len(before["passengers"])
    assert after["cabin"] == "first" and after["flights"] == []
    assert after["payment_history"][-1] == {"payment_id": "credit_card_2140654", "amount": -paid}


def test_passengers_that_are_not_all_objects_are_stored_raw() -> None:
    db = AirlineDB()
    tools = AirlineTools(db)
    size = len(db.peek("reservations", "R9QDGB")["passengers"])
    names = [f"traveller {i}" for i in range(size)]
    result = tools.call("update_reservation_passengers", {"reservation_id": "R9QDGB", "passengers": names})
    assert result.ok and db.peek("reservations", "R9QDGB")["passengers"] == names
    wrong = tools.call("update_reservation_passengers", {"reservation_id": "R9QDGB", "passengers": [{}]})
    assert not wrong.ok  # all objects: each must be a valid passenger


@pytest.mark.parametrize(
    ("expression", "output"),
    [
        ("2 ** 3", "8.0"),
        ("7 // 2", "3.0"),
        ("1 / 3", "0.33"),
        ("-(2 + 3) * 4", "-20.0"),
        ("12345678901234567 * 3", str(round(float(12345678901234567 * 3), 2))),
    ],
)
def test_calculate_evaluates_python_arithmetic(expression: str, output: str) -> None:
    assert AirlineTools(AirlineDB()).call("calculate", {"expression": expression}).output == output


@pytest.mark.parametrize("expression", ["1 / 0", "2 ** 99999", "abs(1)", "()", ""])
def test_calculate_refuses_what_python_cannot_or_should_not_compute(expression: str) -> None:
    assert not AirlineTools(AirlineDB()).call("calculate", {"expression": expression}).ok


def test_calls_by_the_user_and_unknown_tools_change_nothing_in_the_replay() -> None:
    as_user = [ToolCall(c.name, c.arguments, requestor="user") for c in gold("8")]
    assert reward("8", as_user) == 0.0
    assert reward("8", [ToolCall("book_flight", {}), *gold("8")]) == 1.0


CANCEL_NAME, CANCEL_ARGS = "cancel_reservation", {"reservation_id": "R9QDGB"}
CANCEL: dict[str, Any] = {"name": CANCEL_NAME, "arguments": CANCEL_ARGS}
CRITERIA: dict[str, Any] = {"reward_basis": ["DB", "COMMUNICATE"], "communicate_info": []}


def test_a_failed_reference_write_drops_a_match_but_keeps_a_mismatch() -> None:
    broken = {
        **CRITERIA,
        "actions": [{"name": "cancel_reservation", "arguments": {"reservation_id": "NOSUCH"}}],
    }
    nothing = score_criteria(broken, [], [], "user_stop")
    assert nothing.reward == 1.0 and nothing.breakdown == {"COMMUNICATE": 1} and nothing.db_match
    cancelled = score_criteria(broken, [ToolCall(CANCEL_NAME, CANCEL_ARGS)], [], "user_stop")
    assert cancelled.reward == 0.0 and cancelled.breakdown == {"DB": 0, "COMMUNICATE": 1}


def test_a_reference_call_by_the_user_leaves_the_reference_incomplete() -> None:
    by_user = {**CRITERIA, "actions": [{**CANCEL, "requestor": "user"}]}
    result = score_criteria(by_user, [], [], "agent_stop")
    assert result.reward == 1.0 and "DB" not in result.breakdown


def test_no_reference_actions_or_no_criteria_pass_the_db_part() -> None:
    no_actions = {**CRITERIA, "actions": None}
    cancelled = [ToolCall(CANCEL_NAME, CANCEL_ARGS)]
    assert score_criteria(no_actions, cancelled, [], "user_stop").reward == 1.0
    assert score_criteria(None, cancelled, [], "agent_stop").reward == 1.0
    assert score_criteria(None, cancelled, [], "max_turns").reward == 0.0


def test_whitespace_only_assistant_text_is_not_searched() -> None:
    criteria = {**CRITERIA, "actions": [], "communicate_info": [" "]}
    assert score_criteria(criteria, [], ["   "], "user_stop").reward == 0.0
    assert score_criteria(criteria, [], ["a b"], "user_stop").reward == 1.0


@pytest.mark.parametrize(
    ("flight_number", "found"),
    [("HAT001", True), (" hat001 ", True), ("HÁT001", True), ("ＨＡＴ００１", False)],
)
def test_ids_fold_case_and_accents_but_not_compatibility_forms(flight_number: str, found: bool) -> None:
    result = AirlineTools(AirlineDB()).call(
        "get_flight_status", {"flight_number": flight_number, "date": "2024-05-16"}
    )
    assert ("not found" not in result.output) == found, result.output


def test_the_function_tools_offered_are_the_tools_that_bind() -> None:
    from ovtui.environments.tau2_airline.arguments import PARAMETERS
    from ovtui.environments.tau2_airline.schemas import TOOL_SPECS

    offered = {s["function"]["name"]: tuple(s["function"]["parameters"]["properties"]) for s in TOOL_SPECS}
    assert offered == PARAMETERS
