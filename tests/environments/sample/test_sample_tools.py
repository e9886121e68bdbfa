"""The sample environment's tools: each one's effect on the database and its refusals."""

from __future__ import annotations

import json

import pytest

from ovtui.environments.sample.tools import TOOL_SPECS, SupportTools, copy_database, is_read_only, load_policy

SEED = {
    "customers": {"C1000": {"name": "Ada Berg", "email": "ada@example.com", "travel_credit": 0}},
    "reservations": {
        "AB1234": {
            "customer_id": "C1000",
            "date": "2026-04-01",
            "cabin": "economy",
            "refundable": True,
            "price": 300,
            "status": "active",
        },
    },
}


@pytest.fixture
def tools() -> SupportTools:
    return SupportTools(copy_database(SEED))


def test_reads_return_the_record_and_change_nothing(tools: SupportTools) -> None:
    result = tools.call("get_reservation", {"reservation_id": "AB1234"})
    assert result.ok
    assert json.loads(result.output)["price"] == 300
    assert json.loads(tools.call("get_customer", {"customer_id": "C1000"}).output)["name"] == "Ada Berg"
    assert tools.db["reservations"] == SEED["reservations"]


def test_copy_database_is_private_and_completes_tables() -> None:
    db = copy_database(SEED)
    SupportTools(db).call("cancel_reservation", {"reservation_id": "AB1234"})
    assert SEED["reservations"]["AB1234"]["status"] == "active"
    assert db["outbox"] == []


@pytest.mark.parametrize(
    ("tool", "args", "table", "key", "field", "value"),
    [
        ("cancel_reservation", {"reservation_id": "AB1234"}, "reservations", "AB1234", "status", "cancelled"),
        ("refund_payment", {"reservation_id": "AB1234"}, "reservations", "AB1234", "refunded_amount", 300),
        (
            "issue_travel_credit",
            {"customer_id": "C1000", "amount": 120},
            "customers",
            "C1000",
            "travel_credit",
            120,
        ),
        (
            "change_flight",
            {"reservation_id": "AB1234", "new_date": "2026-04-09"},
            "reservations",
            "AB1234",
            "date",
            "2026-04-09",
        ),
        (
            "update_contact_email",
            {"customer_id": "C1000", "email": "new@example.com"},
            "customers",
            "C1000",
            "email",
            "new@example.com",
        ),
    ],
)
def test_writes_change_the_database(
    tools: SupportTools, tool: str, args: dict[str, object], table: str, key: str, field: str, value: object
) -> None:
    result = tools.call(tool, args)
    assert result.ok, result.output
    assert tools.db[table][key][field] == value


def test_notifications_and_handoff(tools: SupportTools) -> None:
    assert tools.call("send_confirmation", {"customer_id": "C1000", "message": "done"}).ok
    assert tools.db["outbox"] == [{"customer_id": "C1000", "message": "done"}]
    assert json.loads(tools.call("transfer_to_human", {"summary": "angry"}).output)["transferred"] is True


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("get_reservation", {"reservation_id": "ZZ9999"}, "no reservation"),
        ("get_customer", {}, "missing argument"),
        ("issue_travel_credit", {"customer_id": "C1000", "amount": -5}, "positive"),
        ("change_flight", {"reservation_id": "AB1234", "new_date": "next week"}, "YYYY-MM-DD"),
        ("update_contact_email", {"customer_id": "C1000", "email": "nope"}, "not an email"),
        ("teleport", {}, "unknown tool"),
    ],
)
def test_refusals_are_errors_not_exceptions(
    tools: SupportTools, tool: str, args: dict[str, object], message: str
) -> None:
    result = tools.call(tool, args)
    assert not result.ok
    assert message in result.output


def test_only_an_active_reservation_can_be_changed(tools: SupportTools) -> None:
    assert tools.call("cancel_reservation", {"reservation_id": "AB1234"}).ok
    again = tools.call("refund_payment", {"reservation_id": "AB1234"})
    assert not again.ok and "cancelled" in again.output


def test_tools_do_not_enforce_the_policy(tools: SupportTools) -> None:
    tools.db["reservations"]["AB1234"]["refundable"] = False
    assert tools.call(
        "refund_payment", {"reservation_id": "AB1234"}
    ).ok  # the rubric, not the tool, forbids it


def test_catalogue_and_policy() -> None:
    assert len(TOOL_SPECS) == 9
    assert [t for t in TOOL_SPECS if is_read_only(t)] == ["get_customer", "get_reservation"]
    policy = load_policy()
    assert "non-refundable" in policy.lower() and "basic economy" in policy.lower()
