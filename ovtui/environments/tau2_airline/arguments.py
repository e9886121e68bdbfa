"""How tau2 turns a tool call's JSON arguments into values, so ours refuse and coerce the same calls.

tau2 calls a tool method with the arguments as keyword arguments and no validation of its own: a
missing or unexpected argument fails like any Python call, and a value is coerced only where the
tool builds one of tau2's pydantic models from it (a flight, a passenger, a payment, a new
reservation, a certificate). Elsewhere a value goes on raw: ``"2"`` for a bag count is stored as
the string ``"2"`` by a baggage update, and the database then differs from the reference one.
We coerce with pydantic models of the same field types, so lax-mode rules (``"2"`` → 2, 2.0 → 2,
2.5 refused, a number refused where a string is due) are pydantic's own.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, TypeAdapter

Record = dict[str, Any]

PARAMETERS: dict[str, tuple[str, ...]] = {
    "book_reservation": (
        "user_id", "origin", "destination", "flight_type", "cabin", "flights", "passengers",
        "payment_methods", "total_baggages", "nonfree_baggages", "insurance",
    ),
    "calculate": ("expression",),
    "cancel_reservation": ("reservation_id",),
    "get_flight_status": ("flight_number", "date"),
    "get_reservation_details": ("reservation_id",),
    "get_user_details": ("user_id",),
    "list_all_airports": (),
    "search_direct_flight": ("origin", "destination", "date"),
    "search_onestop_flight": ("origin", "destination", "date"),
    "send_certificate": ("user_id", "amount"),
    "transfer_to_human_agents": ("summary",),
    "update_reservation_baggages": ("reservation_id", "total_baggages", "nonfree_baggages", "payment_id"),
    "update_reservation_flights": ("reservation_id", "cabin", "flights", "payment_id"),
    "update_reservation_passengers": ("reservation_id", "passengers"),
}  # fmt: skip


class FlightInfo(BaseModel):
    flight_number: str
    date: str


class Passenger(BaseModel):
    first_name: str
    last_name: str
    dob: str


class Payment(BaseModel):
    payment_id: str
    amount: int


class NewReservation(BaseModel):
    """The fields of a booking that tau2 validates before it looks at any flight."""

    origin: str
    destination: str
    flight_type: Literal["round_trip", "one_way"]
    cabin: Literal["business", "economy", "basic_economy"]
    passengers: list[Passenger]
    payment_history: list[Payment]
    total_baggages: int
    nonfree_baggages: int
    insurance: Literal["yes", "no"]


CERTIFICATE_AMOUNT: TypeAdapter[float] = TypeAdapter(float)
PAYMENT_AMOUNT: TypeAdapter[int] = TypeAdapter(int)


class ArgumentError(Exception):
    """The call does not bind to the tool's parameters (as Python's TypeError would say)."""


def bind(name: str, arguments: Record) -> list[Any]:
    """The argument values in parameter order; a missing or unexpected one refuses the call."""
    parameters = PARAMETERS[name]
    missing = [p for p in parameters if p not in arguments]
    if missing:
        raise ArgumentError(f"{name}() missing required argument(s): {', '.join(missing)}")
    unexpected = [a for a in arguments if a not in parameters]
    if unexpected:
        raise ArgumentError(f"{name}() got unexpected argument(s): {', '.join(map(str, unexpected))}")
    return [arguments[p] for p in parameters]


def records_if_all_dicts(value: Any, model: type[BaseModel]) -> Any:
    """tau2's rule for list arguments: when every item is a dict (an empty value counts), each
    becomes ``model`` (validated and coerced); otherwise the value goes on as it came."""
    items = list(value)  # not iterable: TypeError, as tau2's own check raises
    if all(isinstance(item, dict) for item in items):
        return [model(**item).model_dump() for item in items]
    return value
