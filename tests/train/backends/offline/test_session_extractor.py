"""The offline extractor's wording: a profile fact or preference is the clause that states it (no
greeting, no request around it), and a case's task signature is the request's words without the
user's values."""

from __future__ import annotations

import pytest

from ovtui.core.domain import TextPart, ToolPart
from ovtui.plugins.wording.personal import request_pattern, without_personal
from ovtui.protocols.sessions import SessionMessage
from ovtui.train.backends.offline.session_extractor import extract_offline, request_signature, tool_values


def user(text: str) -> SessionMessage:
    return SessionMessage(id="m1", role="user", parts=[TextPart(text=text)])


def stated(text: str) -> list[tuple[str, str]]:
    found = extract_offline([user(text)], "s1", "archive_001").memories
    return [(m.memory_type, str(m.fields["content"])) for m in found]


@pytest.mark.parametrize(
    ("text", "memories"),
    [
        ("Hi, my name is Alice", [("profile", "- My name is Alice")]),
        ("Hello there, my name is Alice, nice to meet you!", [("profile", "- My name is Alice")]),
        (
            "Well, I work as a nurse; I live in Porto.",
            [("profile", "- I work as a nurse"), ("profile", "- I live in Porto")],
        ),
        (
            "My name is Ada and I prefer aisle seats.",
            [("profile", "- My name is Ada"), ("preferences", "- I prefer aisle seats")],
        ),
        ("Oh, I prefer window seats, thanks", [("preferences", "- I prefer window seats")]),
        (
            "Hey! OK so please always send receipts by email.",
            [("preferences", "- Please always send receipts by email")],
        ),
        ("I prefer trains, buses and ferries.", [("preferences", "- I prefer trains, buses and ferries")]),
        ("Thanks, but never call me before 9", [("preferences", "- Never call me before 9")]),
    ],
)
def test_only_the_stated_clause_is_kept(text: str, memories: list[tuple[str, str]]) -> None:
    assert stated(text) == memories


def test_the_task_signature_leaves_the_users_values_out() -> None:
    update = ToolPart(
        tool_id="t1",
        tool_name="update_email",
        tool_input={"customer_id": "C-1001", "email": "ana@example.com", "holder": "Ana"},
        tool_output="ok",
    )
    signatures = {
        request_signature(text, [update])
        for text in [
            "Hi, my name is Ana Ruiz. Please change the email of customer C-1001 to ana@example.com.",
            "Please change the email of customer 4411 to bo@example.org, I prefer email.",
            "Could you change the email of Ana's customer 17 to x@y.net? Thanks",
        ]
    }
    assert signatures == {"change_email_customer"}
    # a request with no words of its own is named by its calls
    assert request_signature("Hi! C-1001", [update]) == "update_email"


def test_the_request_pattern_is_the_request_without_the_users_own() -> None:
    update = ToolPart(
        tool_id="t1",
        tool_name="update_email",
        tool_input={"customer_id": "C-1001", "email": "ana@x.org"},
    )
    request = (
        "Hi, my name is Ana Ruiz. I prefer email. Please change the email of customer C-1001 to ana@x.org"
    )
    assert request_pattern(request, tool_values([update])) == (
        "Please change the email of customer <value> to <value>"
    )


def said(role: str, text: str, index: int) -> SessionMessage:
    return SessionMessage(id=f"m{index}", role=role, parts=[TextPart(text=text)])


def test_the_request_is_read_from_the_whole_conversation_not_its_greeting() -> None:
    lookup = ToolPart(
        tool_id="t1", tool_name="get_booking", tool_input={"booking_id": "B53N8D"}, tool_output="found"
    )
    conversation = [
        said("user", "Hello!", 1),
        said("assistant", "Hi, how can I help you today?", 2),
        said("user", "I need to cancel my booking, please.", 3),
        said("assistant", "Which booking?", 4),
        said("user", "B53N8D", 5),
        SessionMessage(id="m6", role="assistant", parts=[lookup]),
        said("assistant", "Booking B53N8D is cancelled.", 7),
    ]
    [case] = extract_offline(conversation, "s1", "archive_001").cases
    assert case.input["user_query"] == "I need to cancel my booking, please."
    assert "cancel" in case.task_signature and "hello" not in case.task_signature
    # a conversation of small talk only still names its first words as the request
    only_hello = [said("user", "Hello!", 1), SessionMessage(id="m2", role="assistant", parts=[lookup])]
    [greeted] = extract_offline(only_hello, "s2", "archive_001").cases
    assert greeted.input["user_query"] == "Hello!"


def test_a_request_without_personal_is_the_request_as_written_less_the_person() -> None:
    dana = "Hi, I'm Dana and I prefer email updates. Please cancel order 7."
    assert without_personal(dana, ["7"]) == "Please cancel order <n>."  # a short value: any number
    assert without_personal("Can I get an aisle seat?") == "Can I get an aisle seat?"  # nothing to take
    mixed = "This is Bo Lee, reach me at bo@x.org. I always want texts. Why was my refund late?"
    assert without_personal(mixed) == "Reach me at <email>. Why was my refund late?"
    assert without_personal("My name is Ana Ruiz, I need to move my flight to Friday!") == (
        "I need to move my flight to Friday!"
    )
    assert without_personal("Hi, I'm Dana.") == ""


def test_a_self_introduction_is_not_part_of_the_cases_name() -> None:
    """Issue 33: "I am Ana Silva, customer C1234. Please cancel booking…" was named
    ``am_customer_cancel_booking_…``: who asks is not what is asked."""
    cancel = ToolPart(
        tool_id="t1", tool_name="cancel_booking", tool_input={"booking_id": "B9"}, tool_output="ok"
    )
    for text in [
        "I am Ana Silva, customer C1234. Please cancel booking B9, my plans changed.",
        "I'm Ana Silva, customer C1234. Please cancel booking B9, my plans changed.",
        "Hi, this is Ana Silva. Please cancel booking B9, my plans changed.",
    ]:
        assert request_signature(text, [cancel]) == "cancel_booking_plans_changed", text
    # "I am" that goes on to ask something is still the request
    assert request_signature("I am looking to cancel booking B9.", [cancel]) == "looking_cancel_booking"
