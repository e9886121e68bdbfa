"""The sample environment's database and tools (a small airline help desk).

The database is plain JSON (``customers`` and ``reservations`` keyed by id, plus an ``outbox`` of
messages sent), so a case can carry its own seed and the evaluator can replay a conversation on a
fresh copy. Tools mutate only the in-memory copy they were given. Like a real back office they do
not enforce the written policy (a non-refundable booking *can* be refunded): obeying the policy is
the agent's job, and the rubric checks it.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ovtui.environments.sample.package_data import read_text

Database = dict[str, Any]
ToolEffect = Literal["read", "write", "handoff", "notify"]

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def load_policy() -> str:
    """The written policy the agent is supposed to follow (Markdown)."""
    return read_text("policy.md")


def empty_database() -> Database:
    return {"customers": {}, "reservations": {}, "outbox": []}


def copy_database(seed: Database) -> Database:
    """A private copy of a seed; missing tables are added so tools never meet a KeyError."""
    db = copy.deepcopy(seed)
    for table, empty in empty_database().items():
        db.setdefault(table, empty)
    return db


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    params: tuple[str, ...]
    effect: ToolEffect


@dataclass(frozen=True)
class ToolResult:
    ok: bool
    output: str


class ToolError(Exception):
    """A call the back office refuses (unknown id, bad argument, wrong state)."""


TOOL_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("get_customer", "Read a customer record.", ("customer_id",), "read"),
        ToolSpec(
            "get_reservation",
            "Read a reservation (fare, cabin, refundability, status).",
            ("reservation_id",),
            "read",
        ),
        ToolSpec("cancel_reservation", "Cancel an active reservation.", ("reservation_id",), "write"),
        ToolSpec(
            "refund_payment",
            "Refund a reservation to its original payment method.",
            ("reservation_id",),
            "write",
        ),
        ToolSpec(
            "issue_travel_credit",
            "Add travel credit to a customer account.",
            ("customer_id", "amount"),
            "write",
        ),
        ToolSpec(
            "change_flight",
            "Move an active reservation to a new date.",
            ("reservation_id", "new_date"),
            "write",
        ),
        ToolSpec("update_contact_email", "Replace the email on file.", ("customer_id", "email"), "write"),
        ToolSpec("transfer_to_human", "Hand the conversation to a human agent.", ("summary",), "handoff"),
        ToolSpec(
            "send_confirmation",
            "Send the customer a confirmation message.",
            ("customer_id", "message"),
            "notify",
        ),
    )
}


def is_read_only(tool_name: str) -> bool:
    spec = TOOL_SPECS.get(tool_name)
    return spec is not None and spec.effect == "read"


class SupportTools:
    """The tools, bound to one database copy."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._handlers: dict[str, Callable[[dict[str, Any]], Any]] = {
            "get_customer": self._get_customer,
            "get_reservation": self._get_reservation,
            "cancel_reservation": self._cancel_reservation,
            "refund_payment": self._refund_payment,
            "issue_travel_credit": self._issue_travel_credit,
            "change_flight": self._change_flight,
            "update_contact_email": self._update_contact_email,
            "transfer_to_human": self._transfer_to_human,
            "send_confirmation": self._send_confirmation,
        }

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        handler = self._handlers.get(name)
        if handler is None:
            return ToolResult(False, f"error: unknown tool {name!r}")
        missing = [p for p in TOOL_SPECS[name].params if p not in args]
        if missing:
            return ToolResult(False, f"error: missing argument(s) {', '.join(missing)}")
        try:
            return ToolResult(True, json.dumps(handler(args), sort_keys=True))
        except ToolError as exc:
            return ToolResult(False, f"error: {exc}")

    # --- lookups ---
    def _customer(self, customer_id: object) -> dict[str, Any]:
        record = self.db["customers"].get(str(customer_id))
        if record is None:
            raise ToolError(f"no customer {customer_id}")
        return dict(record)

    def _reservation(self, reservation_id: object) -> dict[str, Any]:
        record = self.db["reservations"].get(str(reservation_id))
        if record is None:
            raise ToolError(f"no reservation {reservation_id}")
        return dict(record)

    def _active_reservation(self, reservation_id: object) -> dict[str, Any]:
        record = self._reservation(reservation_id)
        if record["status"] != "active":
            raise ToolError(f"reservation is {record['status']}, not active")
        return record

    def _get_customer(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"customer_id": str(args["customer_id"]), **self._customer(args["customer_id"])}

    def _get_reservation(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"reservation_id": str(args["reservation_id"]), **self._reservation(args["reservation_id"])}

    # --- changes ---
    def _set(self, table: str, key: object, **changes: Any) -> None:
        self.db[table][str(key)].update(changes)

    def _cancel_reservation(self, args: dict[str, Any]) -> dict[str, Any]:
        self._active_reservation(args["reservation_id"])
        self._set("reservations", args["reservation_id"], status="cancelled")
        return {"reservation_id": str(args["reservation_id"]), "status": "cancelled"}

    def _refund_payment(self, args: dict[str, Any]) -> dict[str, Any]:
        record = self._active_reservation(args["reservation_id"])
        self._set("reservations", args["reservation_id"], status="refunded", refunded_amount=record["price"])
        return {
            "reservation_id": str(args["reservation_id"]),
            "status": "refunded",
            "amount": record["price"],
        }

    def _issue_travel_credit(self, args: dict[str, Any]) -> dict[str, Any]:
        customer = self._customer(args["customer_id"])
        amount = args["amount"]
        if isinstance(amount, bool) or not isinstance(amount, int | float) or amount <= 0:
            raise ToolError("amount must be a positive number")
        balance = customer.get("travel_credit", 0) + amount
        self._set("customers", args["customer_id"], travel_credit=balance)
        return {"customer_id": str(args["customer_id"]), "travel_credit": balance}

    def _change_flight(self, args: dict[str, Any]) -> dict[str, Any]:
        self._active_reservation(args["reservation_id"])
        new_date = str(args["new_date"])
        if not _DATE.match(new_date):
            raise ToolError("new_date must be YYYY-MM-DD")
        self._set("reservations", args["reservation_id"], date=new_date)
        return {"reservation_id": str(args["reservation_id"]), "date": new_date}

    def _update_contact_email(self, args: dict[str, Any]) -> dict[str, Any]:
        self._customer(args["customer_id"])
        email = str(args["email"])
        if "@" not in email:
            raise ToolError("not an email address")
        self._set("customers", args["customer_id"], email=email)
        return {"customer_id": str(args["customer_id"]), "email": email}

    def _transfer_to_human(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"transferred": True, "queue": "customer_relations"}

    def _send_confirmation(self, args: dict[str, Any]) -> dict[str, Any]:
        self._customer(args["customer_id"])
        self.db["outbox"].append({"customer_id": str(args["customer_id"]), "message": str(args["message"])})
        return {"sent": True}
