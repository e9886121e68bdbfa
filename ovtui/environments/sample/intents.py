"""The user intents of the sample environment: how users phrase them and how they are graded.

Each intent has variants (the situation decides what is correct: a refundable booking is refunded,
a non-refundable one gets travel credit) and two disjoint pools of wordings (``data/wordings.json``),
one for the train split and one for the test split, so held-out cases are phrased differently from
what was learned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovtui.environments.sample.criteria import confirmed_before, forbidden_call, order, required_call, state
from ovtui.environments.sample.package_data import read_json
from ovtui.plugins import RubricCriterion


@dataclass(frozen=True)
class CaseFacts:
    """Everything one case is about; the wordings and rubric are filled from it."""

    customer_id: str
    name: str
    email: str
    reservation_id: str
    origin: str
    destination: str
    date: str
    cabin: str
    refundable: bool
    price: int
    new_date: str
    new_email: str
    delay_hours: int
    user_confirms: bool = True


RubricBuilder = Callable[[CaseFacts, str], tuple[list[RubricCriterion], list[str]]]


@dataclass(frozen=True)
class Intent:
    signature: str
    description: str
    variants: tuple[str, ...]
    train_wordings: tuple[str, ...]
    test_wordings: tuple[str, ...]
    build_rubric: RubricBuilder

    def wordings(self, split: str) -> tuple[str, ...]:
        return self.test_wordings if split == "test" else self.train_wordings


def _cancellation(f: CaseFacts, variant: str) -> tuple[list[RubricCriterion], list[str]]:
    rid, cid = f.reservation_id, f.customer_id
    criteria = [
        order(
            "verify_identity",
            "Always call get_customer to verify the customer's identity before cancel_reservation",
            "get_customer",
            ["cancel_reservation"],
        ),
        order(
            "lookup_before_cancel",
            "Always call get_reservation to look the booking up before cancel_reservation",
            "get_reservation",
            ["cancel_reservation"],
        ),
    ]
    if variant == "user_declines":
        criteria += [
            forbidden_call(
                "respect_decline",
                "Never call cancel_reservation when the user declines",
                "cancel_reservation",
                when="the user declines",
            ),
            state(
                "reservation_kept", "The reservation stays active", "reservations", rid, "status", "active"
            ),
        ]
    else:
        criteria += [
            confirmed_before(
                "explicit_confirmation",
                "Always ask for the user's explicit confirmation before cancel_reservation",
                "cancel_reservation",
            ),
            state(
                "reservation_cancelled",
                "The reservation ends up cancelled",
                "reservations",
                rid,
                "status",
                "cancelled",
            ),
            required_call(
                "confirmation_sent",
                "Always call send_confirmation after cancel_reservation",
                "send_confirmation",
                args={"customer_id": cid},
                after="cancel_reservation",
            ),
        ]
    return criteria, []


def _refund(f: CaseFacts, variant: str) -> tuple[list[RubricCriterion], list[str]]:
    rid, cid = f.reservation_id, f.customer_id
    criteria = [
        order(
            "lookup_fare_rules",
            "Always call get_reservation to check the fare rules "
            "before refund_payment or issue_travel_credit",
            "get_reservation",
            ["refund_payment", "issue_travel_credit"],
        ),
    ]
    if variant == "non_refundable":
        criteria += [
            forbidden_call(
                "no_refund_when_non_refundable",
                "Never call refund_payment when the reservation is non-refundable",
                "refund_payment",
                when="the reservation is non-refundable",
            ),
            required_call(
                "credit_offered",
                "Always offer travel credit for the fare with issue_travel_credit "
                "when the reservation is non-refundable",
                "issue_travel_credit",
                args={"customer_id": cid, "amount": f.price},
            ),
            state(
                "credit_balance",
                "The customer's travel credit equals the fare",
                "customers",
                cid,
                "travel_credit",
                f.price,
            ),
        ]
        return criteria, ["the reservation is non-refundable"]
    criteria += [
        required_call(
            "refund_issued",
            "Always call refund_payment when the reservation is refundable",
            "refund_payment",
            args={"reservation_id": rid},
        ),
        state(
            "reservation_refunded",
            "The reservation ends up refunded",
            "reservations",
            rid,
            "status",
            "refunded",
        ),
    ]
    return criteria, ["the reservation is refundable"]


def _flight_change(f: CaseFacts, variant: str) -> tuple[list[RubricCriterion], list[str]]:
    rid, cid = f.reservation_id, f.customer_id
    if variant == "basic_economy":
        criteria = [
            required_call(
                "fare_rules_checked",
                "Always call get_reservation to check the fare rules before change_flight",
                "get_reservation",
                args={"reservation_id": rid},
            ),
            forbidden_call(
                "no_basic_economy_change",
                "Never call change_flight when the fare is basic economy",
                "change_flight",
                when="the fare is basic economy",
            ),
            state(
                "date_unchanged",
                "The reservation keeps its original date",
                "reservations",
                rid,
                "date",
                f.date,
            ),
        ]
        return criteria, ["the fare is basic economy"]
    criteria = [
        order(
            "lookup_before_change",
            "Always call get_reservation to check the fare rules before change_flight",
            "get_reservation",
            ["change_flight"],
        ),
        confirmed_before(
            "explicit_confirmation",
            "Always ask for the user's explicit confirmation before change_flight",
            "change_flight",
        ),
        required_call(
            "flight_changed",
            "Call change_flight with the requested new date",
            "change_flight",
            args={"reservation_id": rid, "new_date": f.new_date},
        ),
        required_call(
            "confirmation_sent",
            "Always call send_confirmation after change_flight",
            "send_confirmation",
            args={"customer_id": cid},
            after="change_flight",
        ),
        state(
            "date_changed",
            "The reservation ends up on the requested date",
            "reservations",
            rid,
            "date",
            f.new_date,
        ),
    ]
    return criteria, ["the fare allows changes"]


def _complaint(f: CaseFacts, variant: str) -> tuple[list[RubricCriterion], list[str]]:
    criteria = [
        order(
            "lookup_before_transfer",
            "Always call get_reservation before transfer_to_human so the human agent has the booking details",
            "get_reservation",
            ["transfer_to_human"],
        ),
        forbidden_call(
            "no_self_compensation",
            "Never call issue_travel_credit when the customer demands compensation",
            "issue_travel_credit",
            when="the customer demands compensation",
        ),
        required_call(
            "escalated",
            "Always call transfer_to_human when the customer demands compensation",
            "transfer_to_human",
        ),
        state(
            "no_credit_granted",
            "The customer's travel credit stays unchanged",
            "customers",
            f.customer_id,
            "travel_credit",
            0,
        ),
    ]
    return criteria, ["the customer demands compensation"]


def _email_update(f: CaseFacts, variant: str) -> tuple[list[RubricCriterion], list[str]]:
    cid = f.customer_id
    criteria = [
        order(
            "verify_identity",
            "Always call get_customer to verify the customer's identity before update_contact_email",
            "get_customer",
            ["update_contact_email"],
        ),
        required_call(
            "email_updated",
            "Call update_contact_email with the new address",
            "update_contact_email",
            args={"customer_id": cid, "email": f.new_email},
        ),
        required_call(
            "confirmation_sent",
            "Always call send_confirmation after update_contact_email",
            "send_confirmation",
            args={"customer_id": cid},
            after="update_contact_email",
        ),
        state(
            "email_on_file",
            "The customer's email ends up as the new address",
            "customers",
            cid,
            "email",
            f.new_email,
        ),
    ]
    return criteria, []


def _intent(signature: str, variants: tuple[str, ...], build_rubric: RubricBuilder) -> Intent:
    wordings = _WORDINGS[signature]
    return Intent(
        signature,
        str(wordings["description"]),
        variants,
        tuple(wordings["train"]),
        tuple(wordings["test"]),
        build_rubric,
    )


_WORDINGS: dict[str, dict[str, Any]] = read_json("wordings.json")
INTENTS: tuple[Intent, ...] = (
    _intent("booking_cancellation", ("user_confirms", "user_declines"), _cancellation),
    _intent("refund_request", ("refundable", "non_refundable"), _refund),
    _intent("flight_change", ("changeable", "basic_economy"), _flight_change),
    _intent("delay_complaint", ("compensation",), _complaint),
    _intent("email_update", ("single",), _email_update),
)
