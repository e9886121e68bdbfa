"""What the prompts keep: the facts a rubric turns on survive the clipping of long tool outputs."""

from __future__ import annotations

import json

from ovtui.core.domain import (
    Case,
    CriterionResult,
    Message,
    PatchSemanticGradient,
    Rollout,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    TextPart,
    ToolPart,
)
from ovtui.core.fileformat import MemoryFile
from ovtui.core.rollouts import feedback_text
from ovtui.train.backends.llm.merger import describe_proposals
from ovtui.train.backends.llm.render import MAX_STRUCTURED_OUTPUT, render_evaluation, render_rollout

# A reservation as an airline back office returns it: the bulky parts (passengers with addresses
# and dates of birth, flights, payments) come first; the fields the policy depends on come last.
RESERVATION = {
    "reservation_id": "ZFA04Y",
    "user_id": "sara_doe_496",
    "passengers": [
        {
            "first_name": f"Passenger{i}",
            "last_name": "Doe",
            "dob": f"1990-01-0{i + 1}",
            "address": {"street": f"{i} Long Street Name Avenue", "city": "Springfield", "zip": "12345"},
        }
        for i in range(6)
    ],
    "flights": [
        {"flight_number": f"HAT{100 + i}", "date": "2024-05-20", "origin": "SFO", "destination": "JFK"}
        for i in range(4)
    ],
    "payment_history": [{"payment_id": "credit_card_7815826", "amount": 1240}],
    "cabin": "economy",
    "status": "active",
    "membership": "gold",
    "insurance": "no",
    "created_at": "2024-05-12T15:12:25",
}


def _rollout() -> Rollout:
    case = Case(
        name="cancel_7",
        task_signature="cancel_reservation",
        input={"user_query": "cancel ZFA04Y"},
        rubric=Rubric(
            name="cancel",
            criteria=[
                RubricCriterion(
                    name="no_refund_without_insurance",
                    description="economy without insurance booked over 24 h ago is not refunded",
                    required=True,
                )
            ],
        ),
    )
    messages = [
        Message(role="user", parts=[TextPart(text="Please cancel ZFA04Y and refund me.")]),
        Message(
            role="assistant",
            parts=[
                ToolPart(
                    tool_id="t1",
                    tool_name="get_reservation_details",
                    tool_input={"reservation_id": "ZFA04Y"},
                    tool_output=json.dumps(RESERVATION, indent=2),
                )
            ],
        ),
    ]
    return Rollout(case=case, messages=messages)


def test_a_long_reservation_keeps_the_fields_a_policy_rule_needs() -> None:
    assert len(json.dumps(RESERVATION)) > 2 * MAX_STRUCTURED_OUTPUT  # it must be cut
    prompt = render_rollout(_rollout())
    [tool_line] = [line for line in prompt.splitlines() if "get_reservation_details" in line]
    for fact in ("status=active", "membership=gold", "insurance=no", "created_at=2024-05-12T15:12:25"):
        assert fact in tool_line
    assert "cabin=economy" in tool_line and "reservation_id=ZFA04Y" in tool_line
    assert "passengers=[" in tool_line and "… 3 more" in tool_line  # collections summarised
    assert len(tool_line) < MAX_STRUCTURED_OUTPUT + 200
    assert "economy without insurance booked over 24 h ago is not refunded" in prompt  # the rubric


def test_plain_and_broken_outputs_are_clipped_by_length() -> None:
    rollout = _rollout()
    part = rollout.messages[1].parts[0]
    assert isinstance(part, ToolPart)
    part.tool_output = "x" * 5000
    assert "[4600 more chars]" in render_rollout(rollout)
    part.tool_output = '{"status": "active", ' + "y" * 5000  # not valid JSON: cut by length
    assert "more chars]" in render_rollout(rollout)


def test_the_analyzer_feedback_is_not_sent_twice() -> None:
    evaluation = RubricEvaluation(
        passed=False,
        score=0.0,
        feedback=["refunded a non-refundable booking"],
        criterion_results=[
            CriterionResult(
                criterion_name="no_refund_without_insurance",
                passed=False,
                score=0.0,
                feedback=["refund issued"],
            )
        ],
    )
    once = render_evaluation(evaluation, feedback_text(evaluation))
    assert once.count("refunded a non-refundable booking") == 1 and "refund issued" in once
    assert "## Evaluator feedback" not in once
    other = render_evaluation(evaluation, "The user was upset.")
    assert other.endswith("## Evaluator feedback\nThe user was upset.")


def test_the_merge_names_a_repeated_proposal_instead_of_showing_it_again() -> None:
    def proposal(name: str, rule: str) -> PatchSemanticGradient:
        after = MemoryFile(
            uri=f"viking://user/default/memories/experiences/{name}.md",
            content=f"## Situation\n- {name}\n## Reflect\n- {rule}",
            fields={"experience_name": name, "memory_type": "experiences"},
        )
        return PatchSemanticGradient(
            before_file=None, after_file=after, base_version=None, evidence_trajectory_uris=["t"]
        )

    text = describe_proposals(
        [proposal("refunds", "NEVER guess"), proposal("refunds", "NEVER guess"), proposal("refunds", "ASK")]
    )
    assert text.count("+- NEVER guess") == 1 and "+- ASK" in text
    assert "### Proposal [1]: `refunds` — new experience" in text
    assert "the same change as proposal [0]" in text
    assert "Field Diff: experience_name" not in text and "Field Diff: memory_type" not in text


def test_a_record_returned_again_is_shown_as_what_changed() -> None:
    rollout = _rollout()
    cancelled = {**RESERVATION, "status": "cancelled"}
    other = {**RESERVATION, "reservation_id": "XYZ999", "status": "cancelled", "cabin": "business"}
    other.update({"membership": "silver", "insurance": "yes", "created_at": "2024-06-01T00:00:00"})
    other.update({"user_id": "someone_else", "passengers": [], "flights": [], "payment_history": []})
    for index, record in enumerate((cancelled, other)):
        part = ToolPart(
            tool_id=f"t{index + 2}",
            tool_name="cancel_reservation",
            tool_input={"reservation_id": record["reservation_id"]},
            tool_output=json.dumps(record),
        )
        rollout.messages.append(Message(role="assistant", parts=[part]))
    lines = [line for line in render_rollout(rollout).splitlines() if "→ tool cancel_reservation" in line]
    assert lines[0].endswith(": {the get_reservation_details output above, except: status=cancelled}")
    assert "membership=silver" in lines[1] and "reservation_id=XYZ999" in lines[1]  # mostly new: whole
