"""The airline agent's tools over an AirlineDB, with tau2-bench's semantics (our own code, checked
against tau2's tools.py, toolkit and evaluator).

What matters for the reward is exact: which calls change what, the checks that make a call fail
and in which order (a few odd calls fail part-way and keep what they changed first, as in tau2),
how arguments bind and are coerced (``arguments``), ids of new reservations (HATHAT, HATHAU,
HATHAV) and certificates (certificate_3221322..4), the fixed "now" (2024-05-15T15:00:00 EST),
prices (fare × passengers, $30 insurance per passenger, $50 per non-free bag), how payments,
certificates and gift-card balances move, seat counts on booking (cancelling and changing flights
do not release seats), and that a $0 update records no payment but still needs a usable method.
"""

from __future__ import annotations

import ast
import copy
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovtui.environments.tau2_airline.arguments import (
    CERTIFICATE_AMOUNT,
    PARAMETERS,
    PAYMENT_AMOUNT,
    ArgumentError,
    FlightInfo,
    NewReservation,
    Passenger,
    Payment,
    bind,
    records_if_all_dicts,
)
from ovtui.environments.tau2_airline.db import AirlineDB, Record

NOW = "2024-05-15T15:00:00"
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_PAYMENT_NUMBERS = (3221322, 3221323, 3221324)
AIRPORTS = (
    ("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"), ("ORD", "Chicago"),
    ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"), ("ATL", "Atlanta"), ("MIA", "Miami"),
    ("BOS", "Boston"), ("PHX", "Phoenix"), ("IAH", "Houston"), ("LAS", "Las Vegas"),
    ("MCO", "Orlando"), ("EWR", "Newark"), ("CLT", "Charlotte"), ("MSP", "Minneapolis"),
    ("DTW", "Detroit"), ("PHL", "Philadelphia"), ("LGA", "LaGuardia"),
)  # fmt: skip


class ToolError(Exception):
    """A call the airline refuses; nothing was changed."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    ok: bool
    output: str


# tau2 evaluates the expression as Python: "**" and "//" are made of allowed characters too.
_ARITHMETIC: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}
MAX_EXPONENT = 10_000  # Python would grind on 9**9**9; nobody prices a flight with it


def _arith(node: ast.AST) -> Any:
    """The value as Python computes it (ints stay exact ints until the final rounding)."""
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        left, right = _arith(node.left), _arith(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ToolError("Invalid expression: exponent too large")
        return _ARITHMETIC[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](_arith(node.operand))
    raise ToolError("Invalid expression")


class AirlineTools:
    def __init__(self, db: AirlineDB) -> None:
        self.db = db

    # --- lookups ---------------------------------------------------------------------------
    def _user(self, user_id: Any) -> Record:
        key = self.db.resolve("users", user_id)
        if key is None:
            raise ToolError(f"User {user_id} not found")
        return self.db.get("users", key)

    def _reservation(self, reservation_id: Any) -> Record:
        key = self.db.resolve("reservations", reservation_id)
        if key is None:
            raise ToolError(f"Reservation {reservation_id} not found")
        return self.db.get("reservations", key)

    def _flight(self, flight_number: Any) -> Record:
        key = self.db.resolve("flights", flight_number)
        if key is None:
            raise ToolError(f"Flight {flight_number} not found")
        return self.db.get("flights", key)

    def _instance(self, flight: Record, date: str) -> Record:
        if date not in flight["dates"]:
            raise ToolError(f"Flight {flight['flight_number']} not found on date {date}")
        instance: Record = flight["dates"][date]
        return instance

    def _direct(
        self, date: str, origin: str | None, destination: str | None, leave_after: str | None = None
    ) -> list[Record]:
        found = []
        for key in self.db.keys("flights"):
            flight = self.db.peek("flights", key)
            instance = flight["dates"].get(date)
            if (
                (origin is None or flight["origin"] == origin)
                and (destination is None or flight["destination"] == destination)
                and instance is not None
                and instance.get("status") == "available"
                and (leave_after is None or flight["scheduled_departure_time_est"] >= leave_after)
            ):
                found.append(
                    {
                        "flight_number": flight["flight_number"],
                        "origin": flight["origin"],
                        "destination": flight["destination"],
                        "status": "available",
                        "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                        "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
                        "date": None,
                        "available_seats": copy.deepcopy(instance["available_seats"]),
                        "prices": copy.deepcopy(instance["prices"]),
                    }
                )
        return found

    def _pay_update(self, reservation: Record, user: Record, payment_id: Any, total: Any) -> None:
        """Charge (or refund, when negative) an update. A gift card is debited before the payment
        record is made, so an amount that is no whole number of dollars fails *after* the debit,
        as in tau2; $0 records no payment but still needs a method that may pay for updates."""
        methods = user["payment_methods"]
        if payment_id not in methods:
            raise ToolError("Payment method not found")
        method = methods[payment_id]
        if method["source"] == "certificate":
            raise ToolError("Certificate cannot be used to update reservation")
        if method["source"] == "gift_card" and method["amount"] < total:
            raise ToolError("Gift card balance is not enough")
        if method["source"] == "gift_card":
            method["amount"] -= total
        if total != 0:
            payment = {"payment_id": payment_id, "amount": PAYMENT_AMOUNT.validate_python(total)}
            reservation["payment_history"].append(payment)

    # --- the tools (parameters in tau2's order; values as tau2 passes them on) ---------------
    def book_reservation(
        self, user_id: Any, origin: Any, destination: Any, flight_type: Any, cabin: Any, flights: Any,
        passengers: Any, payment_methods: Any, total_baggages: Any, nonfree_baggages: Any, insurance: Any,
    ) -> Record:  # fmt: skip
        infos = records_if_all_dicts(flights, FlightInfo)
        travellers = records_if_all_dicts(passengers, Passenger)
        payments = records_if_all_dicts(payment_methods, Payment)
        user = self._user(user_id)
        user_id = user["user_id"]
        new_id = next((i for i in NEW_RESERVATION_IDS if not self.db.has("reservations", i)), None)
        if new_id is None:
            raise ToolError("Too many reservations")
        fields = NewReservation(
            origin=origin, destination=destination, flight_type=flight_type, cabin=cabin,
            passengers=travellers, payment_history=payments, total_baggages=total_baggages,
            nonfree_baggages=nonfree_baggages, insurance=insurance,
        ).model_dump()  # fmt: skip
        travellers, payments, cabin = fields["passengers"], fields["payment_history"], fields["cabin"]
        legs: list[Record] = []
        instances: list[Record] = []
        total = 0
        for info in infos:
            if not isinstance(info, dict):  # a list that was not all flights
                raise ToolError(f"Invalid flight {info!r}")
            flight = self._flight(info["flight_number"])
            number, date = flight["flight_number"], info["date"]
            instance = self._instance(flight, date)
            if instance.get("status") != "available":
                raise ToolError(f"Flight {number} not available on date {date}")
            if instance["available_seats"][cabin] < len(travellers):
                raise ToolError(f"Not enough seats on flight {number}")
            price = instance["prices"][cabin]
            legs.append(
                {
                    "origin": flight["origin"],
                    "destination": flight["destination"],
                    "flight_number": number,
                    "date": date,
                    "price": price,
                }
            )
            instances.append(instance)
            total += price * len(travellers)
        if insurance == "yes":
            total += 30 * len(travellers)
        total += 50 * nonfree_baggages  # the raw value: "2" repeats a string and then fails, as in tau2
        methods = user["payment_methods"]
        for payment in payments:
            pid, amount = payment["payment_id"], payment["amount"]
            if pid not in methods:
                raise ToolError(f"Payment method {pid} not found")
            if methods[pid]["source"] in ("gift_card", "certificate") and methods[pid]["amount"] < amount:
                raise ToolError(f"Not enough balance in payment method {pid}")
        paid = sum(p["amount"] for p in payments)
        if paid != total:
            raise ToolError(f"Payment amount does not add up, total price is {total}, but paid {paid}")
        for payment in payments:  # a certificate named twice fails here, after earlier debits: as tau2
            method = methods[payment["payment_id"]]
            if method["source"] == "gift_card":
                method["amount"] -= payment["amount"]
            elif method["source"] == "certificate":
                methods.pop(payment["payment_id"])
        for instance in instances:
            instance["available_seats"][cabin] -= len(travellers)
        reservation = {
            "reservation_id": new_id,
            "user_id": user_id,
            **fields,
            "flights": legs,
            "created_at": NOW,
            "status": None,
        }
        self.db.add("reservations", new_id, reservation)
        user["reservations"].append(new_id)
        return reservation

    def calculate(self, expression: Any) -> str:
        if not all(c in "0123456789+-*/(). " for c in expression):
            raise ToolError("Invalid characters in expression")
        try:
            value = _arith(ast.parse(expression, mode="eval"))
        except (SyntaxError, ZeroDivisionError, OverflowError) as exc:
            raise ToolError(f"Invalid expression: {exc}") from None
        return str(round(float(value), 2))

    def cancel_reservation(self, reservation_id: Any) -> Record:
        reservation = self._reservation(reservation_id)
        refunds = [
            {"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]
        ]
        reservation["payment_history"].extend(refunds)
        reservation["status"] = "cancelled"
        return reservation

    def get_reservation_details(self, reservation_id: Any) -> Record:
        return self._reservation(reservation_id)

    def get_user_details(self, user_id: Any) -> Record:
        return self._user(user_id)

    def list_all_airports(self) -> list[Record]:
        return [{"iata": code, "city": city} for code, city in AIRPORTS]

    def search_direct_flight(self, origin: Any, destination: Any, date: Any) -> list[Record]:
        return self._direct(date, origin, destination)

    def search_onestop_flight(self, origin: Any, destination: Any, date: Any) -> list[list[Record]]:
        pairs = []
        for first in self._direct(date, origin, None):
            first["date"] = date
            # tau2's own rule for an overnight first leg (no zero padding of the day).
            second_date = (
                f"2024-05-{int(date[-2:]) + 1}" if "+1" in first["scheduled_arrival_time_est"] else date
            )
            for second in self._direct(
                second_date, first["destination"], destination, first["scheduled_arrival_time_est"]
            ):
                second["date"] = second_date
                pairs.append([first, second])
        return pairs

    def send_certificate(self, user_id: Any, amount: Any) -> str:
        user = self._user(user_id)
        for number in NEW_PAYMENT_NUMBERS:
            payment_id = f"certificate_{number}"
            if payment_id not in user["payment_methods"]:
                user["payment_methods"][payment_id] = {
                    "source": "certificate",
                    "id": payment_id,
                    "amount": CERTIFICATE_AMOUNT.validate_python(amount),
                }
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        raise ToolError("Too many certificates")

    def transfer_to_human_agents(self, summary: Any) -> str:
        return "Transfer successful"

    def update_reservation_baggages(
        self, reservation_id: Any, total_baggages: Any, nonfree_baggages: Any, payment_id: Any
    ) -> Record:
        reservation = self._reservation(reservation_id)
        user = self._user(reservation["user_id"])
        total = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
        self._pay_update(reservation, user, payment_id, total)
        reservation["total_baggages"] = total_baggages  # stored raw, as tau2 does
        reservation["nonfree_baggages"] = nonfree_baggages
        return reservation

    def update_reservation_flights(
        self, reservation_id: Any, cabin: Any, flights: Any, payment_id: Any
    ) -> Record:
        infos = records_if_all_dicts(flights, FlightInfo)
        reservation = self._reservation(reservation_id)
        user = self._user(reservation["user_id"])
        travellers = len(reservation["passengers"])
        total = 0
        legs: list[Record] = []
        for info in infos:
            if not isinstance(info, dict):
                raise ToolError(f"Invalid flight {info!r}")
            flight = self._flight(info["flight_number"])
            number, date = flight["flight_number"], info["date"]
            kept = next(
                (
                    leg
                    for leg in reservation["flights"]
                    if leg["flight_number"] == number
                    and leg["date"] == date
                    and cabin == reservation["cabin"]
                ),
                None,
            )
            if kept is not None:
                total += kept["price"] * travellers
                legs.append(kept)
                continue
            instance = self._instance(flight, date)
            if instance.get("status") != "available":
                raise ToolError(f"Flight {number} not available on date {date}")
            if instance["available_seats"][cabin] < travellers:  # an unknown cabin: KeyError, as tau2
                raise ToolError(f"Not enough seats on flight {number}")
            leg = {
                "flight_number": number,
                "date": date,
                "price": instance["prices"][cabin],
                "origin": flight["origin"],
                "destination": flight["destination"],
            }
            total += leg["price"] * travellers
            legs.append(leg)
        total -= sum(leg["price"] for leg in reservation["flights"]) * travellers
        self._pay_update(reservation, user, payment_id, total)
        reservation["flights"] = legs
        reservation["cabin"] = cabin
        return reservation

    def update_reservation_passengers(self, reservation_id: Any, passengers: Any) -> Record:
        travellers = records_if_all_dicts(passengers, Passenger)
        reservation = self._reservation(reservation_id)
        if len(travellers) != len(reservation["passengers"]):
            raise ToolError("Number of passengers does not match")
        reservation["passengers"] = copy.deepcopy(travellers)  # not all dicts: stored raw, as tau2
        return reservation

    def get_flight_status(self, flight_number: Any, date: Any) -> str:
        return str(self._instance(self._flight(flight_number), date)["status"])

    # --- dispatch --------------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool; a refused or malformed call answers ``Error: …``. Like tau2, a call that
        fails part-way keeps what it changed before failing (a few odd calls do; see the tests)."""
        if name not in TOOL_NAMES:
            return ToolResult(False, f"Error: Tool '{name}' not found.")
        if not isinstance(arguments, dict):
            return ToolResult(False, "Error: arguments must be a JSON object")
        try:
            value = getattr(self, name)(*bind(name, arguments))
        except (ToolError, ArgumentError) as exc:
            return ToolResult(False, f"Error: {exc}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # malformed values, as tau2 raises
            return ToolResult(False, f"Error: {type(exc).__name__}: {exc}")
        return ToolResult(True, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


TOOL_NAMES = frozenset(PARAMETERS)
