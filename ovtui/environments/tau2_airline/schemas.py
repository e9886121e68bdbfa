"""The airline tools as OpenAI function tools (our own descriptions of the arguments)."""

from __future__ import annotations

from typing import Any

_STR = {"type": "string"}
_INT = {"type": "integer"}
_FLIGHTS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"flight_number": _STR, "date": {"type": "string", "description": "YYYY-MM-DD"}},
        "required": ["flight_number", "date"],
    },
}
_PASSENGERS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "first_name": _STR,
            "last_name": _STR,
            "dob": {"type": "string", "description": "YYYY-MM-DD"},
        },
        "required": ["first_name", "last_name", "dob"],
    },
}
_CABIN = {"type": "string", "enum": ["basic_economy", "economy", "business"]}


def _tool(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(properties)},
        },
    }


TOOL_SPECS: list[dict[str, Any]] = [
    _tool(
        "book_reservation",
        "Book a new reservation for a user; the payments must add up to the total price.",
        {
            "user_id": _STR,
            "origin": {"type": "string", "description": "IATA code"},
            "destination": {"type": "string", "description": "IATA code"},
            "flight_type": {"type": "string", "enum": ["one_way", "round_trip"]},
            "cabin": _CABIN,
            "flights": _FLIGHTS,
            "passengers": _PASSENGERS,
            "payment_methods": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"payment_id": _STR, "amount": _INT},  # whole dollars, as tau2 types it
                    "required": ["payment_id", "amount"],
                },
            },
            "total_baggages": _INT,
            "nonfree_baggages": _INT,
            "insurance": {"type": "string", "enum": ["yes", "no"]},
        },
    ),
    _tool("calculate", "Evaluate an arithmetic expression (+ - * / and parentheses).", {"expression": _STR}),
    _tool(
        "cancel_reservation", "Cancel a whole reservation and refund its payments.", {"reservation_id": _STR}
    ),
    _tool("get_reservation_details", "Read a reservation.", {"reservation_id": _STR}),
    _tool("get_user_details", "Read a user's profile, payment methods and reservations.", {"user_id": _STR}),
    _tool("list_all_airports", "List the airports served.", {}),
    _tool(
        "search_direct_flight",
        "Available direct flights between two airports on a date.",
        {"origin": _STR, "destination": _STR, "date": _STR},
    ),
    _tool(
        "search_onestop_flight",
        "Available one-stop connections between two airports on a date.",
        {"origin": _STR, "destination": _STR, "date": _STR},
    ),
    _tool(
        "send_certificate",
        "Give a user a travel certificate worth an amount.",
        {"user_id": _STR, "amount": _INT},
    ),
    _tool(
        "transfer_to_human_agents",
        "Hand the conversation to a human agent, with a summary of the issue.",
        {"summary": _STR},
    ),
    _tool(
        "update_reservation_baggages",
        "Change the bags of a reservation; extra non-free bags are charged to the payment method.",
        {"reservation_id": _STR, "total_baggages": _INT, "nonfree_baggages": _INT, "payment_id": _STR},
    ),
    _tool(
        "update_reservation_flights",
        "Replace the flights of a reservation (list every flight of the new itinerary) and/or its cabin.",
        {"reservation_id": _STR, "cabin": _CABIN, "flights": _FLIGHTS, "payment_id": _STR},
    ),
    _tool(
        "update_reservation_passengers",
        "Replace the passengers of a reservation (same number of passengers).",
        {"reservation_id": _STR, "passengers": _PASSENGERS},
    ),
    _tool("get_flight_status", "The status of a flight on a date.", {"flight_number": _STR, "date": _STR}),
]
