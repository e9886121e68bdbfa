"""The offline backend: trajectory extraction, gradient proposals and plan merging."""

from __future__ import annotations

import re

import pytest

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import (
    Case,
    CriterionResult,
    Experience,
    ExperienceSet,
    Message,
    PatchSemanticGradient,
    PolicyStatus,
    Rollout,
    RolloutAnalysis,
    Rubric,
    RubricCriterion,
    RubricEvaluation,
    TextPart,
    ToolPart,
    Trajectory,
    TrajectoryOutcome,
)
from ovtui.core.fileformat import MemoryFile
from ovtui.environments.sample import SampleAgentExecutor
from ovtui.environments.sample.generate import generate_cases
from ovtui.plugins.backends import GradientProposer, PlanMerger, TrajectoryExtractor
from ovtui.plugins.wording.sections import parse_sections
from ovtui.train.backends.offline import (
    OFFLINE_LABEL,
    OfflineGradientProposer,
    OfflinePlanMerger,
    OfflineTrajectoryExtractor,
)
from ovtui.train.backends.offline.gradients import Observed, lessons_from_failure

ROOT = "viking://user/default/memories/experiences"
IDS = re.compile(r"\bC\d{4}\b|\b(?=[A-Z0-9]*\d)[A-Z0-9]{6}\b")


def rollout_for(signature: str, variant: str, policy_set: ExperienceSet | None = None) -> Rollout:
    case = next(
        c
        for c in generate_cases("train", 20, 8)
        if c.task_signature == signature and c.metadata["variant"] == variant
    )
    policy_set = policy_set or ExperienceSet(root_uri=ROOT)
    return SampleAgentExecutor().execute_sync([case], policy_set, ExecutionContext("p"))[0]


def analysis_of(rollout: Rollout) -> tuple[Trajectory, RolloutAnalysis]:
    assert rollout.evaluation is not None
    draft = OfflineTrajectoryExtractor().draft(rollout, rollout.evaluation)
    trajectory = Trajectory(name=draft.name, uri=f"viking://t/{draft.name}.md", content=draft.content)
    return trajectory, RolloutAnalysis(
        rollout=rollout, evaluation=rollout.evaluation, trajectories=[trajectory]
    )


def experience(name: str, content: str) -> Experience:
    return Experience(
        name=name, uri=f"{ROOT}/{name}.md", version=2, status=PolicyStatus.DRAFT, content=content
    )


def gradient(name: str, content: str, *, rationale: str = "") -> PatchSemanticGradient:
    after = MemoryFile(uri=f"{ROOT}/{name}.md", content=content, fields={"experience_name": name})
    return PatchSemanticGradient(before_file=None, after_file=after, base_version=None, rationale=rationale)


def test_backends_satisfy_the_protocols_and_are_labelled() -> None:
    backends: tuple[TrajectoryExtractor, GradientProposer, PlanMerger] = (
        OfflineTrajectoryExtractor(),
        OfflineGradientProposer(),
        OfflinePlanMerger(),
    )
    assert all(b.label == OFFLINE_LABEL == "offline" for b in backends)


# --- trajectories -------------------------------------------------------------------------------


async def test_trajectory_from_a_failed_rollout() -> None:
    rollout = rollout_for("refund_request", "non_refundable")
    assert rollout.evaluation is not None
    [draft] = await OfflineTrajectoryExtractor().extract(
        rollout, rollout.evaluation, "extra note about C9999"
    )
    assert draft.name == "refund_request"
    assert draft.outcome == TrajectoryOutcome.FAILURE
    assert [line for line in draft.content.splitlines() if line.startswith("## ")] == [
        "## Task",
        "## Steps",
        "## Outcome",
    ]
    assert "1. refund_payment(reservation_id)" in draft.content
    assert "no_refund_when_non_refundable failed: refund_payment was called although" in draft.content
    assert "- extra note about <id>" in draft.content
    assert not IDS.search(draft.content) and not IDS.search(draft.retrieval_anchor)


def test_feedback_that_restates_the_evaluation_is_not_repeated() -> None:
    rollout = rollout_for("email_update", "single")
    assert rollout.evaluation is not None
    restated = "\n".join(
        [
            "Evaluation: FAILED (score 0.50)",
            *(f"- {line}" for line in rollout.evaluation.feedback),
            "- [ok] email_updated",
        ]
        + [f"- [FAILED] {line}" for line in rollout.evaluation.feedback]
    )
    plain = OfflineTrajectoryExtractor().draft(rollout, rollout.evaluation)
    assert OfflineTrajectoryExtractor().draft(rollout, rollout.evaluation, restated).content == plain.content
    noted = OfflineTrajectoryExtractor().draft(rollout, rollout.evaluation, restated + "\n- judge: too curt")
    assert noted.content == plain.content + "\n- judge: too curt"


def test_trajectory_of_a_success_shows_the_question_and_the_answer() -> None:
    learned = OfflineGradientProposer().proposal(
        analysis_of(rollout_for("flight_change", "changeable"))[1], []
    )
    assert learned is not None
    policy_set = ExperienceSet(root_uri=ROOT, policies=[experience("flight_change", learned.content)])
    rollout = rollout_for("flight_change", "changeable", policy_set)
    assert rollout.evaluation is not None and rollout.evaluation.passed
    draft = OfflineTrajectoryExtractor().draft(rollout, rollout.evaluation)
    assert draft.outcome == TrajectoryOutcome.SUCCESS
    assert "ask the user to confirm (the user answered:" in draft.content
    assert "success: score 1.00, 5 of 5 criteria met" in draft.content


@pytest.mark.parametrize(
    ("passed", "score", "results", "outcome"),
    [
        (True, 1.0, 1, TrajectoryOutcome.SUCCESS),
        (False, 0.6, 1, TrajectoryOutcome.PARTIAL),
        (False, 0.2, 1, TrajectoryOutcome.FAILURE),
        (False, 0.0, 0, TrajectoryOutcome.UNKNOWN),
    ],
)
def test_outcome_follows_the_evaluation(
    passed: bool, score: float, results: int, outcome: TrajectoryOutcome
) -> None:
    case = Case(name="weird_case_42", task_signature="", input={}, rubric=Rubric(name=""))
    evaluation = RubricEvaluation(
        passed=passed,
        score=score,
        criterion_results=[CriterionResult(criterion_name="c", passed=passed, score=score)] * results,
    )
    rollout = Rollout(case=case, messages=[Message(role="user", parts=[TextPart(text="hello")])])
    draft = OfflineTrajectoryExtractor().draft(rollout, evaluation)
    assert draft.outcome == outcome
    assert draft.name == "weird_case"  # from the case name, digits dropped


# --- gradients ----------------------------------------------------------------------------------


async def test_a_failure_creates_an_experience_from_the_failed_criteria_kinds() -> None:
    trajectory, analysis = analysis_of(rollout_for("refund_request", "non_refundable"))
    [proposal] = await OfflineGradientProposer().propose(trajectory, analysis, [])
    assert proposal.experience_name == "refund_request"
    sections = parse_sections(proposal.content)
    # The naive agent refunded without looking anything up: the order and the missing credit are
    # lessons; "never refund" is not kept unconditioned — another lesson shows refunds do happen.
    assert sections.reflect == [
        "- ALWAYS call get_reservation before refund_payment",
        "- ALWAYS call issue_travel_credit",
    ]
    assert sections.approach == []  # nothing worked yet: Approach keeps its placeholder
    assert "## Approach\n- No successful approach recorded yet" in proposal.content
    assert sections.situation[0] == "- The request is about: refund request."
    assert not IDS.search(proposal.content)


def test_a_success_adds_its_sequence_under_the_facts_it_observed() -> None:
    proposer = OfflineGradientProposer()
    current = experience("refund_request", "")
    # Round 1 teaches the lookup; round 2 refunds after looking, so "never refund" is learned under
    # what it saw; round 3 succeeds.
    for _ in range(3):
        rollout = rollout_for(
            "refund_request", "non_refundable", ExperienceSet(root_uri=ROOT, policies=[current])
        )
        assert rollout.evaluation is not None
        if rollout.evaluation.passed:
            break
        proposal = proposer.proposal(analysis_of(rollout)[1], [current])
        assert proposal is not None
        current = experience("refund_request", proposal.content)
    assert rollout.evaluation is not None and rollout.evaluation.passed
    # One rollout's proposal keeps every fact it observed; merging with others keeps what distinguishes.
    reflect = parse_sections(current.content).reflect
    [never] = [x for x in reflect if x.startswith("- NEVER call refund_payment when")]
    assert "the reservation is not refundable" in never
    proposal = proposer.proposal(analysis_of(rollout)[1], [experience("seat_selection", "x"), current])
    assert proposal is not None and proposal.experience_name == "refund_request"
    [sequence] = parse_sections(proposal.content).approach
    assert sequence.startswith("- IF ") and "the reservation is not refundable" in sequence
    assert sequence.endswith("THEN get_reservation → issue_travel_credit")
    assert "succeeded" in proposal.rationale


def test_repeated_evidence_adds_nothing() -> None:
    proposer = OfflineGradientProposer()
    analysis = analysis_of(rollout_for("email_update", "single"))[1]
    first = proposer.proposal(analysis, [])
    assert first is not None
    assert proposer.proposal(analysis, [experience("email_update", first.content)]) is None


def test_a_close_name_counts_as_the_same_intent() -> None:
    analysis = analysis_of(rollout_for("email_update", "single"))[1]
    proposal = OfflineGradientProposer().proposal(
        analysis, [experience("update_email", "## Situation\n- old")]
    )
    assert proposal is not None and proposal.experience_name == "update_email"
    assert parse_sections(proposal.content).situation[0] == "- old"


@pytest.mark.parametrize(
    ("kind", "meta", "lesson"),
    [
        ("forbidden_call", {"tool": "x"}, "NEVER call x when the reservation is not refundable"),
        (
            "order",
            {"before": "a", "after": ["x", "never_called"]},
            "ALWAYS call a before x when the reservation is not refundable",
        ),
        (
            "confirmed_before",
            {"tool": "x"},
            "ALWAYS ask the user to confirm before x when the reservation is not refundable",
        ),
        ("required_call", {"tool": "y"}, "ALWAYS call y when the reservation is not refundable"),
        (
            "required_call",
            {"tool": "y", "after": "x"},
            "ALWAYS call y after x when the reservation is not refundable",
        ),
        ("required_call", {"tool": "x", "args": {"n": 1}}, None),
        ("state", {"table": "t", "key": "k", "field": "f", "equals": 1}, None),
    ],
)
def test_lessons_come_from_the_criterion_kind_never_its_description(
    kind: str, meta: dict[str, object], lesson: str | None
) -> None:
    messages = [
        Message(role="user", parts=[TextPart(text="hi")]),
        Message(
            role="assistant",
            parts=[
                ToolPart(
                    tool_id="1",
                    tool_name="get_reservation",
                    tool_input={},
                    tool_output='{"refundable": false, "reservation_id": "K4P7Q2"}',
                )
            ],
        ),
        Message(
            role="assistant", parts=[ToolPart(tool_id="2", tool_name="x", tool_input={}, tool_output="{}")]
        ),
    ]
    for description in ("Always call a before x", "anything a person writes", ""):
        criterion = RubricCriterion(name="c", description=description, metadata={"kind": kind, **meta})
        found = [x.render() for x in lessons_from_failure(criterion, Observed(messages))]
        assert found == ([lesson] if lesson else [])


# --- merging ------------------------------------------------------------------------------------

A = "## Situation\n- s\n## Approach\n- a\n## Reflect\n- NEVER r"
B = "## Situation\n- s\n## Approach\n- b\n## Reflect\n- NEVER r\n- ALWAYS q"


async def test_gradients_for_one_target_become_one_item_with_every_line_once() -> None:
    decisions = await OfflinePlanMerger().merge(
        [
            gradient("refund_request", A, rationale="one"),
            gradient("seat", B),
            gradient("refund_request", B, rationale="two"),
        ],
        ExperienceSet(root_uri=ROOT),
        [],
    )
    by_name = {d.experience_name: d for d in decisions}
    assert set(by_name) == {"refund_request", "seat"}
    merged = by_name["refund_request"]
    assert merged.kind == "upsert" and merged.source_gradients == [0, 2]
    assert merged.content is not None
    assert parse_sections(merged.content).approach == ["- a", "- b"]
    assert parse_sections(merged.content).reflect == ["- NEVER r", "- ALWAYS q"]
    assert "one" in merged.rationale and "two" in merged.rationale


def test_merge_keeps_what_the_file_already_says() -> None:
    current = experience("refund_request", "## Situation\n- s\n## Approach\n- z\n## Reflect\n- ALWAYS keep")
    [decision] = OfflinePlanMerger().decisions(
        [gradient("refund_request", A)], ExperienceSet(root_uri=ROOT, policies=[current]), []
    )
    assert decision.content is not None
    assert parse_sections(decision.content).approach == ["- z", "- a"]
    assert parse_sections(decision.content).reflect == ["- ALWAYS keep", "- NEVER r"]


def test_near_duplicate_new_names_are_merged() -> None:
    decisions = OfflinePlanMerger().decisions(
        [gradient("refund_request", A), gradient("request_refund", B)], ExperienceSet(root_uri=ROOT), []
    )
    assert [(d.experience_name, d.source_gradients) for d in decisions] == [("refund_request", [0, 1])]


def test_nothing_new_means_no_item() -> None:
    policy_set = ExperienceSet(root_uri=ROOT, policies=[experience("refund_request", B)])
    assert (
        OfflinePlanMerger().decisions([gradient("refund_request", A.replace("- a", "- b"))], policy_set, [])
        == []
    )


def test_an_experience_the_merge_makes_redundant_is_deleted() -> None:
    covered = "## Situation\n- s\n## Reflect\n- NEVER r"
    policy_set = ExperienceSet(
        root_uri=ROOT,
        policies=[
            experience("refund_request", A),
            experience("request_refund_old", covered),  # a near-duplicate name, every line in the merge
            experience("seat_selection", covered),  # same lines, unrelated name: kept
        ],
    )
    decisions = OfflinePlanMerger().decisions([gradient("refund_request", B)], policy_set, [])
    assert [(d.kind, d.experience_name, d.source_gradients) for d in decisions] == [
        ("upsert", "refund_request", [0]),
        ("delete", "request_refund_old", [0]),
    ]


def test_the_rationale_reads_an_email_update_not_a_email_update() -> None:
    rollout = rollout_for("email_update", "single")
    assert rollout.evaluation is not None and not rollout.evaluation.passed
    proposal = OfflineGradientProposer().proposal(analysis_of(rollout)[1], [])
    assert proposal is not None and ": an email update rollout failed" in proposal.rationale
