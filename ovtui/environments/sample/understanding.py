"""What the scripted agent understands of a text without any experience: the kind of request
(its own intent labels, unrelated to case signatures) and the concrete values it mentions.

This stands in for an LLM's language understanding. It knows *what* a user wants; it does not know
the policy for handling it — that has to come from experiences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ovtui.environments.sample.vocabulary import correct

# The agent's own intent labels and the main action it takes for each when it knows no better.
MAIN_ACTION = {
    "complaint": "issue_travel_credit",
    "email": "update_contact_email",
    "refund": "refund_payment",
    "change": "change_flight",
    "cancel": "cancel_reservation",
}

# Ties are broken by this order: a complaint that mentions a refund is still a complaint, and
# "change the email" is an email update.
_SIGNALS: dict[str, tuple[str, ...]] = {
    "complaint": (r"\bcompensat\w*", r"\bdelay\w*", r"\blate\b", r"\bcomplain\w*"),
    "email": (r"\be-?mail\b",),
    "refund": (r"(?<!non-)\brefund(?!able)\w*", r"\bmoney\b", r"\bwhat i paid\b", r"\breimburse\w*"),
    "change": (r"\bchang\w*", r"\bmove[ds]?\b", r"\breschedul\w*", r"\brebook\w*", r"\bswitch\w*"),
    "cancel": (r"\bcancel\w*", r"\bcall off\b"),
}
_GENERAL = re.compile(r"\b(any|every|all)\b[^.]*\b(request|conversation|customer|contact)", re.IGNORECASE)

_CUSTOMER_ID = re.compile(r"\bC\d{4}\b")
_RESERVATION_ID = re.compile(r"\b(?=[A-Z0-9]{6}\b)(?=[A-Z0-9]*\d)[A-Z][A-Z0-9]{5}\b")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_COMPENSATION = re.compile(r"\bcompensat\w*|\bmake (it|this) up\b", re.IGNORECASE)


def classify_intent(text: str) -> str | None:
    """The agent's reading of what a text is about, or None when it recognises no request."""
    lowered = correct(text).lower()
    counts = {
        intent: sum(len(re.findall(p, lowered)) for p in patterns) for intent, patterns in _SIGNALS.items()
    }
    best = max(counts.values())
    if best == 0:
        return None
    return next(intent for intent in _SIGNALS if counts[intent] == best)


def is_general(text: str) -> bool:
    """A text about every conversation (etiquette) rather than one kind of request."""
    return classify_intent(text) is None and bool(_GENERAL.search(text))


@dataclass(frozen=True)
class RequestDetails:
    text: str
    intent: str | None
    customer_id: str | None
    reservation_id: str | None
    new_date: str | None
    email: str | None
    mentions_compensation: bool


def read_request(text: str) -> RequestDetails:
    def first(pattern: re.Pattern[str]) -> str | None:
        match = pattern.search(text)
        return match.group(0) if match else None

    return RequestDetails(
        text=text,
        intent=classify_intent(text),
        customer_id=first(_CUSTOMER_ID),
        reservation_id=first(_RESERVATION_ID),
        new_date=first(_DATE),
        email=first(_EMAIL),
        mentions_compensation=bool(_COMPENSATION.search(text)),
    )
