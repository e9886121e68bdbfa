"""Inputs in OpenViking's shapes, for the golden prompts (tests) and the token bench.

What real workspaces hold and the small synthetic ones of other tests do not: experiences whose
``links`` are OpenViking's link objects (empty values included), tags and a status; trajectories
with a ``task_query``, case URIs and a session archive; a case memory; an airline conversation whose
tool outputs are nested JSON (a user with saved payment methods, a reservation with passengers and
flights); a conversation and a session in Chinese; a peer who speaks in a session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ovtui.core.domain import (
    Case,
    CriterionResult,
    Message,
    Rollout,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    TextPart,
    ToolPart,
    Trajectory,
    TrajectoryOutcome,
)
from ovtui.core.fileformat import render_memory
from ovtui.protocols.sessions import AddMessageRequest, SessionMessage

PREFIX = "viking://user/default/memories"
CREATED = "2026-03-10T08:00:00Z"

EXPERIENCES: dict[str, str] = {
    "cancel_reservation": (
        "## Situation\n- The user asks to cancel a booking, or says they can no longer travel\n"
        "## Approach\n1. get_user_details, then get_reservation_details for the booking named\n"
        "2. IF booked within 24 h OR business cabin OR travel insurance THEN a refund is allowed\n"
        "3. State what will happen and ask for an explicit yes before cancel_reservation\n"
        "## Reflect\n- NEVER cancel before an explicit confirmation\n"
        "- NEVER promise a refund the policy does not allow"
    ),
    "change_flight": (
        "## Situation\n- The user wants another date or flight on an existing booking\n"
        "## Approach\n1. get_reservation_details; basic economy cannot be modified\n"
        "2. search_direct_flight for the new date, list the options with prices\n"
        "3. Confirm the fare difference, then update_reservation_flights\n"
        "## Reflect\n- ALWAYS keep the cabin unless the user asks to change it"
    ),
    "baggage_allowance": (
        "## Situation\n- The user asks how many bags they may bring or wants to add bags\n"
        "## Approach\n- Read the membership and cabin from the user and the reservation, then answer\n"
        "## Reflect\n- NEVER charge for bags the membership includes"
    ),
    "refund_status": (
        "## Situation\n- The user asks where a refund is\n"
        "## Approach\n- Look the reservation up; refunds take 5 to 7 business days to the original payment\n"
        "## Reflect\n- ALWAYS name the payment method the refund goes to"
    ),
    "seat_change": (
        "## Situation\n- 用户想换座位（靠窗或靠过道）\n"
        "## Approach\n- 先查预订，再说明可选座位\n"
        "## Reflect\n- NEVER change a seat without saying the fee first"
    ),
}


def link(name: str, n: int) -> dict[str, Any]:
    """One of an experience's links, as OpenViking writes it (null and empty values included)."""
    return {
        "from_uri": f"{PREFIX}/experiences/{name}.md",
        "to_uri": f"{PREFIX}/trajectories/{name}_case_{n}_20260219101530.md",
        "link_type": "derived_from",
        "weight": 1.0,
        "match_text": None,
        "description": "",
        "created_at": CREATED,
    }


def experience_fields(name: str, links: int) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "experience_name": name,
        "memory_type": "experiences",
        "status": "production",
        "version": 3,
        "tags": ["airline", name.split("_")[0]],
        "created_at": "2026-02-19T10:15:30Z",
        "updated_at": CREATED,
    }
    if links:
        fields["links"] = [link(name, n) for n in range(links)]
    return fields


def write_experiences(root: Path, count: int = len(EXPERIENCES), links: int = 0) -> list[str]:
    """``count`` experience files in OpenViking's shape under ``root``; their names."""
    folder = root / "memories" / "experiences"
    folder.mkdir(parents=True, exist_ok=True)
    names = list(EXPERIENCES)[:count]
    for name in names:
        text = render_memory(EXPERIENCES[name], experience_fields(name, links))
        (folder / f"{name}.md").write_text(text, encoding="utf-8")
    return names


USER = {
    "user_id": "mia_li_3668",
    "name": {"first_name": "Mia", "last_name": "Li"},
    "address": {"address1": "975 Sunset Drive", "city": "Austin", "country": "USA", "zip": "78750"},
    "email": "mia.li3818@example.com",
    "dob": "1990-04-05",
    "payment_methods": {
        "credit_card_4421486": {"source": "credit_card", "brand": "visa", "last_four": "7447"},
        "certificate_7504069": {"source": "certificate", "amount": 250},
    },
    "saved_passengers": [{"first_name": "Amelia", "last_name": "Ahmed", "dob": "1957-03-21"}],
    "membership": "gold",
    "reservations": ["NO6JO3", "AIXC49", "HKEG34"],
}


def reservation(reservation_id: str, *, insurance: str, created_at: str) -> dict[str, Any]:
    return {
        "reservation_id": reservation_id,
        "user_id": "mia_li_3668",
        "origin": "JFK",
        "destination": "SEA",
        "flight_type": "one_way",
        "cabin": "economy",
        "flights": [
            {
                "origin": "JFK",
                "destination": "ATL",
                "flight_number": "HAT268",
                "date": "2026-05-20",
                "price": 136,
            },
            {
                "origin": "ATL",
                "destination": "SEA",
                "flight_number": "HAT039",
                "date": "2026-05-20",
                "price": 166,
            },
        ],
        "passengers": [
            {"first_name": "Mia", "last_name": "Li", "dob": "1990-04-05"},
            {"first_name": "Amelia", "last_name": "Ahmed", "dob": "1957-03-21"},
        ],
        "payment_history": [{"payment_id": "credit_card_4421486", "amount": 604}],
        "created_at": created_at,
        "total_baggages": 1,
        "nonfree_baggages": 0,
        "insurance": insurance,
        "status": None,
    }


def tool(tool_id: str, name: str, arguments: dict[str, Any], output: Any) -> ToolPart:
    return ToolPart(
        tool_id=tool_id,
        tool_name=name,
        tool_input=arguments,
        tool_output=json.dumps(output, indent=2),
    )


def airline_case(index: int) -> Case:
    reservation_id = ["NO6JO3", "AIXC49", "HKEG34"][index % 3]
    return Case(
        name=f"airline_cancel_{index}",
        task_signature="cancel_reservation",
        input={"user_query": f"Hi, I need to cancel my trip {reservation_id}, something came up at work."},
        rubric=Rubric(
            name="cancel_reservation",
            criteria=[
                RubricCriterion(
                    name="confirm_before_cancel",
                    description="asks for an explicit yes before calling cancel_reservation",
                    required=True,
                ),
                RubricCriterion(
                    name="no_refund_without_insurance",
                    description="economy without insurance booked over 24 h ago is not refunded",
                    required=True,
                ),
            ],
        ),
    )


def airline_rollout(index: int = 0) -> Rollout:
    """A cancellation in four turns; every third one refunds what the policy does not allow."""
    case = airline_case(index)
    reservation_id = str(case.input["user_query"]).split("trip ")[1].split(",")[0]
    passed = index % 3 != 0
    booking = reservation(reservation_id, insurance="no", created_at="2026-05-02T15:12:25")
    final = (
        "Done: the reservation is cancelled. As an economy booking without insurance made over 24 hours "
        "ago it is not refundable."
        if passed
        else "Done: the reservation is cancelled and $604 will be refunded to your Visa card."
    )
    messages = [
        Message(role="system", parts=[TextPart(text="You are an airline customer-service agent. " * 20)]),
        Message(role="user", parts=[TextPart(text=str(case.input["user_query"]))]),
        Message(
            role="assistant",
            parts=[
                TextPart(text="I can help with that. Let me look up your account first."),
                tool("t1", "get_user_details", {"user_id": "mia_li_3668"}, USER),
                tool("t2", "get_reservation_details", {"reservation_id": reservation_id}, booking),
                TextPart(
                    text=f"Reservation {reservation_id} (JFK → SEA, 2026-05-20, 2 passengers, economy) "
                    "can be cancelled. Shall I go ahead? Please answer yes to confirm."
                ),
            ],
        ),
        Message(role="user", parts=[TextPart(text="Yes, please cancel it. Will I get my money back?")]),
        Message(
            role="assistant",
            parts=[
                tool(
                    "t3",
                    "cancel_reservation",
                    {"reservation_id": reservation_id},
                    {**booking, "status": "cancelled"},
                ),
                TextPart(text=final),
            ],
        ),
    ]
    verdicts = {"confirm_before_cancel": True, "no_refund_without_insurance": passed}
    evaluation = RubricEvaluation(
        passed=passed,
        score=1.0 if passed else 0.5,
        criterion_results=[
            CriterionResult(
                criterion_name=name,
                passed=ok,
                score=float(ok),
                feedback=[] if ok else ["promised a refund on a non-refundable economy booking"],
            )
            for name, ok in verdicts.items()
        ],
    )
    return Rollout(case=case, messages=messages, evaluation=evaluation)


def cjk_rollout() -> Rollout:
    """A baggage question in Chinese, answered well."""
    case = Case(
        name="baggage_zh_7",
        task_signature="baggage_allowance",
        input={"user_query": "你好，我是金卡会员，经济舱可以免费托运几件行李？"},
        rubric=Rubric(
            name="baggage_allowance",
            criteria=[
                RubricCriterion(
                    name="reads_membership",
                    description="answers from the membership and cabin on record",
                    required=True,
                )
            ],
        ),
    )
    messages = [
        Message(role="user", parts=[TextPart(text=str(case.input["user_query"]))]),
        Message(
            role="assistant",
            parts=[
                tool(
                    "t1",
                    "get_user_details",
                    {"user_id": "wang_fang_1024"},
                    {**USER, "user_id": "wang_fang_1024"},
                ),
                TextPart(text="根据您的金卡会员身份，经济舱每位乘客可免费托运 3 件行李。"),
            ],
        ),
    ]
    evaluation = RubricEvaluation(
        passed=True,
        score=1.0,
        criterion_results=[CriterionResult(criterion_name="reads_membership", passed=True, score=1.0)],
    )
    return Rollout(case=case, messages=messages, evaluation=evaluation)


def trajectory(rollout: Rollout, name: str = "cancel_reservation") -> Trajectory:
    """The trajectory the analyzer writes for ``rollout``, as the proposer is given it."""
    failed = rollout.evaluation is not None and not rollout.evaluation.passed
    content = (
        "## Task\n- The user wants to cancel a one-way economy booking without insurance\n"
        "## Steps\n1. get_user_details → gold member\n"
        "2. get_reservation_details → economy, no insurance, booked 18 days earlier\n"
        "3. asked for explicit confirmation; the user said yes\n"
        "4. cancel_reservation → cancelled\n"
        "## Outcome\n"
        + (
            "- failure: promised a refund on a non-refundable economy booking"
            if failed
            else "- success: cancelled after confirmation, no refund promised"
        )
    )
    return Trajectory(
        name=name,
        uri=f"{PREFIX}/trajectories/{name}_{rollout.case.name}_20260310080000.md",
        content=content,
        outcome=TrajectoryOutcome.FAILURE if failed else TrajectoryOutcome.SUCCESS,
        retrieval_anchor="user cancels a booking and asks for a refund",
        metadata={
            "task_query": str(rollout.case.input.get("user_query", "")),
            "case_uris": [f"{PREFIX}/cases/{rollout.case.name}.md"],
            "source_archive_uri": "viking://session/default/s1/history/archive_001",
        },
    )


def session_messages() -> list[SessionMessage]:
    """A session in Chinese and English in which a peer (the user's colleague) speaks too."""
    said: list[tuple[str, str, str | None]] = [
        ("user", "我下个月要去西雅图出差，请帮我订靠窗的座位。我不吃海鲜。", None),
        ("assistant", "好的，已记下：靠窗座位，不吃海鲜。请问出发日期？", None),
        ("user", "5 月 20 日从纽约出发。My colleague Tom will join me.", None),
        ("user", "Hi, Tom here. I always fly business and need an aisle seat.", "tom"),
        ("assistant", "Noted, Tom: business class, aisle seat.", None),
    ]
    return [
        AddMessageRequest.model_validate({"role": role, "content": text, "peer_id": peer})
        .to_stored(f"m{i}")
        .model_copy(update={"created_at": f"2026-03-10T08:0{i}:00Z"})
        for i, (role, text, peer) in enumerate(said)
    ]


PROFILE = "# The user\n- Works as a sales manager in Austin\n- Prefers short answers"
PREFERENCE = "- Prefers window seats on flights longer than two hours"


def write_user_memories(root: Path) -> None:
    """A profile and one preference, as OpenViking writes them."""
    memories = root / "memories"
    (memories / "preferences").mkdir(parents=True, exist_ok=True)
    profile = render_memory(PROFILE, {"version": 2, "memory_type": "profile", "updated_at": CREATED})
    (memories / "profile.md").write_text(profile, encoding="utf-8")
    fields = {"topic": "seating", "version": 1, "memory_type": "preferences", "created_at": CREATED}
    (memories / "preferences" / "seating.md").write_text(render_memory(PREFERENCE, fields), encoding="utf-8")
