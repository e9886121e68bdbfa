"""The airline agent's tools over an AirlineDB, with tau2-bench's semantics (our own code).

What matters for the reward is exact: which calls change what, the checks that make a call fail
*before* it changes anything, ids of new reservations (HATHAT, HATHAU, HATHAV) and certificates
(certificate_3221322..4), the fixed "now" (2024-05-15T15:00:00 EST), prices (fare × passengers,
$30 insurance per passenger, $50 per non-free bag), how payments, certificates and gift-card
balances move, seat counts on booking (cancelling and changing flights do not release seats),
and that a $0 update records no payment but still needs a usable payment method.
"""

from __future__ import annotations

import ast
import copy
import json
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovtui.environments.tau2_airline.db import AirlineDB, Record

NOW = "2024-05-15T15:00:00"
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_PAYMENT_NUMBERS = (3221322, 3221323, 3221324)
CABINS = ("basic_economy", "economy", "business")
FLIGHT_TYPES = ("one_way", "round_trip")
INSURANCE = ("yes", "no")
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


def _need(args: dict[str, Any], *names: str) -> list[Any]:
    missing = [n for n in names if n not in args]
    if missing:
        raise ToolError(f"missing argument(s): {', '.join(missing)}")
    return [args[n] for n in names]


def _choice(value: Any, allowed: tuple[str, ...], field: str) -> str:
    if value not in allowed:
        raise ToolError(f"{field} must be one of {', '.join(allowed)}, not {value!r}")
    return str(value)


def _flight_infos(flights: Any) -> list[tuple[str, str]]:
    if not isinstance(flights, list):
        raise ToolError("flights must be a list of {flight_number, date}")
    out = []
    for item in flights:
        if not isinstance(item, dict) or "flight_number" not in item or "date" not in item:
            raise ToolError("each flight needs flight_number and date")
        out.append((str(item["flight_number"]), str(item["date"])))
    return out


def _passengers(passengers: Any) -> list[Record]:
    if not isinstance(passengers, list):
        raise ToolError("passengers must be a list of {first_name, last_name, dob}")
    out = []
    for item in passengers:
        if not isinstance(item, dict) or not {"first_name", "last_name", "dob"} <= set(item):
            raise ToolError("each passenger needs first_name, last_name and dob")
        out.append({"first_name": item["first_name"], "last_name": item["last_name"], "dob": item["dob"]})
    return out


_ARITHMETIC: dict[type, Callable[..., Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
}


def _arith(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return float(_ARITHMETIC[type(node.op)](_arith(node.left), _arith(node.right)))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _ARITHMETIC:
        return float(_ARITHMETIC[type(node.op)](_arith(node.operand)))
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

    def _pay_update(self, reservation: Record, user: Record, payment_id: Any, total: float) -> None:
        """Charge (or refund, when negative) an update; $0 records no payment but still needs a
        payment method that may pay for updates."""
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
            reservation["payment_history"].append({"payment_id": payment_id, "amount": total})

    # --- the tools -------------------------------------------------------------------------
    def book_reservation(self, args: dict[str, Any]) -> Record:
        values = _need(
            args, "user_id", "origin", "destination", "flight_type", "cabin", "flights", "passengers",
            "payment_methods", "total_baggages", "nonfree_baggages", "insurance",
        )  # fmt: skip
        user_id, origin, destination, flight_type, cabin, flights, passengers, payments = values[:8]
        bags, paid_bags, ins = values[8:]
        _choice(flight_type, FLIGHT_TYPES, "flight_type")
        _choice(cabin, CABINS, "cabin")
        _choice(ins, INSURANCE, "insurance")
        infos = _flight_infos(flights)
        travellers = _passengers(passengers)
        if not isinstance(payments, list) or not all(
            isinstance(p, dict) and {"payment_id", "amount"} <= set(p) for p in payments
        ):
            raise ToolError("payment_methods must be a list of {payment_id, amount}")
        payments = [{"payment_id": p["payment_id"], "amount": p["amount"]} for p in payments]
        user = self._user(user_id)
        user_id = user["user_id"]
        new_id = next((i for i in NEW_RESERVATION_IDS if not self.db.has("reservations", i)), None)
        if new_id is None:
            raise ToolError("Too many reservations")
        legs: list[Record] = []
        instances: list[Record] = []
        total = 0
        for number, date in infos:
            flight = self._flight(number)
            number = flight["flight_number"]
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
        if ins == "yes":
            total += 30 * len(travellers)
        total += 50 * paid_bags
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
        for payment in payments:
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
            "origin": origin,
            "destination": destination,
            "flight_type": flight_type,
            "cabin": cabin,
            "flights": legs,
            "passengers": travellers,
            "payment_history": payments,
            "created_at": NOW,
            "total_baggages": bags,
            "nonfree_baggages": paid_bags,
            "insurance": ins,
            "status": None,
        }
        self.db.add("reservations", new_id, reservation)
        user["reservations"].append(new_id)
        return reservation

    def calculate(self, args: dict[str, Any]) -> str:
        (expression,) = _need(args, "expression")
        if not isinstance(expression, str) or not all(c in "0123456789+-*/(). " for c in expression):
            raise ToolError("Invalid characters in expression")
        try:
            value = _arith(ast.parse(expression, mode="eval"))
        except (SyntaxError, ZeroDivisionError) as exc:
            raise ToolError(f"Invalid expression: {exc}") from None
        return str(round(value, 2))

    def cancel_reservation(self, args: dict[str, Any]) -> Record:
        (reservation_id,) = _need(args, "reservation_id")
        reservation = self._reservation(reservation_id)
        refunds = [
            {"payment_id": p["payment_id"], "amount": -p["amount"]} for p in reservation["payment_history"]
        ]
        reservation["payment_history"].extend(refunds)
        reservation["status"] = "cancelled"
        return reservation

    def get_reservation_details(self, args: dict[str, Any]) -> Record:
        return self._reservation(*_need(args, "reservation_id"))

    def get_user_details(self, args: dict[str, Any]) -> Record:
        return self._user(*_need(args, "user_id"))

    def list_all_airports(self, args: dict[str, Any]) -> list[Record]:
        return [{"iata": code, "city": city} for code, city in AIRPORTS]

    def search_direct_flight(self, args: dict[str, Any]) -> list[Record]:
        origin, destination, date = _need(args, "origin", "destination", "date")
        return self._direct(str(date), origin, destination)

    def search_onestop_flight(self, args: dict[str, Any]) -> list[list[Record]]:
        origin, destination, date = (str(v) for v in _need(args, "origin", "destination", "date"))
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

    def send_certificate(self, args: dict[str, Any]) -> str:
        user_id, amount = _need(args, "user_id", "amount")
        user = self._user(user_id)
        for number in NEW_PAYMENT_NUMBERS:
            payment_id = f"certificate_{number}"
            if payment_id not in user["payment_methods"]:
                user["payment_methods"][payment_id] = {
                    "source": "certificate",
                    "id": payment_id,
                    "amount": amount,
                }
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        raise ToolError("Too many certificates")

    def transfer_to_human_agents(self, args: dict[str, Any]) -> str:
        _need(args, "summary")
        return "Transfer successful"

    def update_reservation_baggages(self, args: dict[str, Any]) -> Record:
        reservation_id, bags, paid_bags, payment_id = _need(
            args, "reservation_id", "total_baggages", "nonfree_baggages", "payment_id"
        )
        reservation = self._reservation(reservation_id)
        user = self._user(reservation["user_id"])
        total = 50 * max(0, paid_bags - reservation["nonfree_baggages"])
        self._pay_update(reservation, user, payment_id, total)
        reservation["total_baggages"] = bags
        reservation["nonfree_baggages"] = paid_bags
        return reservation

    def update_reservation_flights(self, args: dict[str, Any]) -> Record:
        reservation_id, cabin, flights, payment_id = _need(
            args, "reservation_id", "cabin", "flights", "payment_id"
        )
        _choice(cabin, CABINS, "cabin")
        infos = _flight_infos(flights)
        reservation = self._reservation(reservation_id)
        user = self._user(reservation["user_id"])
        travellers = len(reservation["passengers"])
        total = 0
        legs: list[Record] = []
        for number, date in infos:
            flight = self._flight(number)
            number = flight["flight_number"]
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
            if instance["available_seats"][cabin] < travellers:
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

    def update_reservation_passengers(self, args: dict[str, Any]) -> Record:
        reservation_id, passengers = _need(args, "reservation_id", "passengers")
        travellers = _passengers(passengers)
        reservation = self._reservation(reservation_id)
        if len(travellers) != len(reservation["passengers"]):
            raise ToolError("Number of passengers does not match")
        reservation["passengers"] = travellers
        return reservation

    def get_flight_status(self, args: dict[str, Any]) -> str:
        flight_number, date = _need(args, "flight_number", "date")
        return str(self._instance(self._flight(flight_number), date)["status"])

    # --- dispatch --------------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run one tool; a refused or malformed call answers ``Error: …`` and changes nothing."""
        method = getattr(self, name, None) if name in TOOL_NAMES else None
        if method is None:
            return ToolResult(False, f"Error: Tool '{name}' not found.")
        if not isinstance(arguments, dict):
            return ToolResult(False, "Error: arguments must be a JSON object")
        try:
            value = method(arguments)
        except ToolError as exc:
            return ToolResult(False, f"Error: {exc}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # malformed values, as tau2 raises
            return ToolResult(False, f"Error: {type(exc).__name__}: {exc}")
        return ToolResult(True, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


TOOL_NAMES = frozenset(
    {
        "book_reservation",
        "calculate",
        "cancel_reservation",
        "get_reservation_details",
        "get_user_details",
        "list_all_airports",
        "search_direct_flight",
        "search_onestop_flight",
        "send_certificate",
        "transfer_to_human_agents",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
        "get_flight_status",
    }
)
