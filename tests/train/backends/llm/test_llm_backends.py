"""The three LLM backends produce the contract objects of ovtui.plugins.backends from scripted replies."""

from __future__ import annotations

import json

from ovtui.core.decisions import PastRejection
from ovtui.core.domain import (
    Case,
    CriterionResult,
    Message,
    PatchSemanticGradient,
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
from ovtui.core.events import EventBus
from ovtui.core.experience_files import file_from_experience
from ovtui.core.fileformat import MemoryFile
from ovtui.llm.client import LLMClient
from ovtui.memory.store import MemoryStore
from ovtui.plugins.backends import (
    REPORTED_CONTRADICTIONS,
    ExperienceProposal,
    MergeDecision,
    TrajectoryDraft,
)
from ovtui.testing.openai_server import FakeOpenAIServer, Reply
from ovtui.train.backends.llm import LLMGradientProposer, LLMPlanMerger, LLMTrajectoryExtractor
from ovtui.train.components.experience_set_loader import ExperienceSetLoader
from ovtui.train.components.policy_optimizer import PatchMergePolicyOptimizer
from ovtui.train.review.gates.contradictions import CONTRADICTIONS
from ovtui.train.review.gates.model_contradictions import BY_MODEL, ModelContradictionCheck
from ovtui.train.review.policy import ReviewPolicy
from ovtui.train.review.rejections import PREVIOUSLY_REJECTED

pytest_plugins = ["ovtui.testing.fixtures"]  # the `fake` server and `client` fixtures

CASE = Case(
    name="cancel_42",
    task_signature="cancel_reservation",
    input={"user_query": "Cancel reservation ABC123 please"},
    rubric=Rubric(
        name="cancel",
        criteria=[
            RubricCriterion(name="confirm_first", description="asks for confirmation before cancelling")
        ],
    ),
)
EVALUATION = RubricEvaluation(
    passed=False,
    score=0.0,
    criterion_results=[
        CriterionResult(
            criterion_name="confirm_first", passed=False, score=0.0, feedback=["cancelled at once"]
        )
    ],
)
ROLLOUT = Rollout(
    case=CASE,
    messages=[
        Message(role="system", parts=[TextPart(text="You are an agent. " * 100)]),
        Message(role="user", parts=[TextPart(text="Cancel reservation ABC123 please")]),
        Message(
            role="assistant",
            parts=[
                TextPart(text="Cancelling now."),
                ToolPart(
                    tool_id="t1",
                    tool_name="cancel_reservation",
                    tool_input={"reservation_id": "ABC123"},
                    tool_output='{"status": "cancelled"}' + " " * 2000,
                ),
            ],
        ),
    ],
)
TRAJECTORY_CONTENT = (
    "## Task\n- cancel a booking\n## Steps\n1. cancel_reservation\n## Outcome\n- failure: no confirmation"
)


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"


async def test_extractor_one_call_per_rollout(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    item = {
        "trajectory_name": "cancel_reservation",
        "content": TRAJECTORY_CONTENT,
        "outcome": "failure",
        "retrieval_anchor": "customer wants to cancel a booking",
        "reward": 0.0,
    }
    fake.push(Reply.json({"trajectories": [item]}))
    drafts = await LLMTrajectoryExtractor(client, store).extract(
        ROLLOUT, EVALUATION, "Ask before you cancel."
    )
    assert drafts == [
        TrajectoryDraft(
            name="cancel_reservation",
            content=TRAJECTORY_CONTENT,
            outcome=TrajectoryOutcome.FAILURE,
            retrieval_anchor="customer wants to cancel a booking",
        )
    ]
    assert LLMTrajectoryExtractor.label == "llm"
    [request] = fake.chat_requests
    prompt = request.messages[1]["content"]
    assert (
        '  → tool cancel_reservation({"reservation_id":"ABC123"}) [completed]: {status=cancelled}' in prompt
    )
    assert "- confirm_first: FAILED (score 0.00) — cancelled at once" in prompt
    assert prompt.endswith("## Evaluator feedback\nAsk before you cancel.")
    assert "You are an agent. You are an agent." in prompt and len(prompt) < 3000  # clipped, not dropped
    assert "tools" not in request.body
    assert client.usage.stage("extract").calls == 1


async def test_proposer_one_call_per_trajectory(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    policy = ExperienceSetLoader(store).load_sync()
    candidates = [policy.by_name()["reservation_cancellation"], policy.by_name()["refund_status"]]
    fake.push(
        Reply.json(
            {
                "experiences": [
                    {
                        "experience_name": "reservation_cancellation",
                        "content": block(
                            "- Look the reservation up first",
                            "- Look the reservation up first\n- Ask for explicit confirmation",
                        ),
                        "rationale": "the rollout cancelled without asking",
                    },
                    {
                        "experience_name": "refund_eligibility",
                        "content": "## Situation\n- x\n## Approach\n- y\n## Reflect\n- z",
                        "status": "draft",
                    },
                ]
            }
        )
    )
    trajectory = Trajectory(
        name="cancel_reservation_20261129120000",
        uri=store.paths.uri_prefix + "memories/trajectories/cancel_reservation_20261129120000.md",
        content=TRAJECTORY_CONTENT,
        outcome=TrajectoryOutcome.FAILURE,
    )
    analysis = RolloutAnalysis(rollout=ROLLOUT, evaluation=EVALUATION, trajectories=[trajectory])
    proposals = await LLMGradientProposer(client, store).propose(trajectory, analysis, candidates)
    updated = candidates[0].content.replace(
        "- Look the reservation up first", "- Look the reservation up first\n- Ask for explicit confirmation"
    )
    assert proposals == [
        ExperienceProposal(
            experience_name="reservation_cancellation",
            content=updated,
            status=None,
            rationale="the rollout cancelled without asking",
        ),
        ExperienceProposal(
            experience_name="refund_eligibility",
            content="## Situation\n- x\n## Approach\n- y\n## Reflect\n- z",
            status="draft",
        ),
    ]
    [request] = fake.chat_requests
    system, user = (m["content"] for m in request.messages)
    assert "one user intent per experience" in system and "split" in system
    assert "- Customer asks where a refund is" in user  # candidates prefetched
    assert "outcome: failure" in user and "confirm_first: FAILED" in user


async def test_merger_one_call_per_batch(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    policy = ExperienceSetLoader(store).load_sync()
    cancel_uri = store.uri_for_name("experiences", "reservation_cancellation")
    before = store.read_uri(cancel_uri)
    assert before is not None
    edited = before.model_copy(update={"content": before.content + "\n- ALWAYS state the refund path"})

    def new(name: str, text: str) -> MemoryFile:
        return MemoryFile(
            uri=store.uri_for_name("experiences", name), content=text, fields={"experience_name": name}
        )

    gradients = [
        PatchSemanticGradient(
            before_file=before, after_file=edited, base_version=2, rationale="r0", confidence=0.8
        ),
        PatchSemanticGradient(
            before_file=None, after_file=new("refund_eligibility", "## Situation\n- a"), base_version=None
        ),
        PatchSemanticGradient(
            before_file=None, after_file=new("refund_rules", "## Situation\n- a too"), base_version=None
        ),
    ]
    similar = [policy.by_name()["address_change"]]
    merged = {
        "experiences": [
            {
                "experience_name": "reservation_cancellation",
                "content": block(
                    "- NEVER cancel before explicit confirmation",
                    "- NEVER cancel before explicit confirmation\n- ALWAYS state the refund path",
                ),
                "source_gradients": [0],
                "rationale": "kept",
            },
            {
                "experience_name": "refund_eligibility",
                "content": "## Situation\n- a\n- a too",
                "source_gradients": [1, 2, 1],
            },
        ],
        "deletes": [
            {
                "uri": store.uri_for_name("experiences", "address_change"),
                "source_gradients": [2],
                "rationale": "dup",
            }
        ],
    }
    bad = json.loads(json.dumps(merged))
    bad["experiences"][1]["source_gradients"] = [1, 7]
    fake.push(Reply.json(bad), Reply.json(merged))
    decisions = await LLMPlanMerger(client, store).merge(gradients, policy, similar)
    assert decisions == [
        MergeDecision(
            experience_name="reservation_cancellation",
            content=edited.content,
            rationale="kept",
            source_gradients=[0],
        ),
        MergeDecision(
            experience_name="refund_eligibility",
            content="## Situation\n- a\n- a too",
            source_gradients=[1, 2],
        ),
        MergeDecision(kind="delete", experience_name="address_change", rationale="dup", source_gradients=[2]),
    ]
    first = fake.chat_requests[0]
    user = first.messages[1]["content"]
    assert "### Proposal [0]: `reservation_cancellation` — edit of " + cancel_uri + " (version 2)" in user
    assert "+- ALWAYS state the refund path" in user and "Field Diff: content" in user
    assert "### Proposal [2]: `refund_rules` — new experience" in user
    assert "- Verify identity, then update the address" in user  # similar file prefetched in full
    assert "numbered from [0]" in first.messages[0]["content"]  # the same system part for every batch
    # index 7 is out of range: one format repair naming it, not a silent loss of provenance
    assert (
        "$.experiences[1].source_gradients[1]: 7 is above the maximum 2"
        in fake.chat_requests[1].messages[-1]["content"]
    )
    assert client.usage.stage("merge").calls == 2


async def test_merger_with_no_gradients_makes_no_call(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    assert await LLMPlanMerger(client, store).merge([], ExperienceSetLoader(store).load_sync(), []) == []
    assert fake.chat_requests == []


class OneRejection:
    """A reviewer turned down a rule for reservation_cancellation, with a reason."""

    rejection = PastRejection(
        memory_type="experiences",
        target_name="reservation_cancellation",
        kind="upsert",
        lines=("- NEVER offer compensation",),
        after="## Reflect\n- NEVER offer compensation",
        note="compensation is for a colleague to decide, not a rule",
        reviewer="ana",
        cases=frozenset({"cancel_42"}),
        plan_id="p1",
    )

    def rejections(self, memory_type: str, target_name: str) -> list[PastRejection]:
        wanted = (memory_type, target_name) == ("experiences", "reservation_cancellation")
        return [self.rejection] if wanted else []


async def test_the_proposer_and_the_merger_are_shown_the_rejections_of_their_targets_with_reasons(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    policy = ExperienceSetLoader(store).load_sync()
    candidates = [policy.by_name()["reservation_cancellation"]]
    trajectory = Trajectory(name="cancel_reservation_1", uri="viking://t/1", content=TRAJECTORY_CONTENT)
    analysis = RolloutAnalysis(rollout=ROLLOUT, evaluation=EVALUATION, trajectories=[trajectory])
    fake.push(Reply.json({"experiences": []}))
    await LLMGradientProposer(client, store, feedback=OneRejection()).propose(
        trajectory, analysis, candidates
    )
    fake.push(Reply.json({"experiences": []}))
    current = file_from_experience(candidates[0])
    gradient = PatchSemanticGradient(
        before_file=current,
        after_file=current.model_copy(update={"content": current.content + "\n- ask first"}),
        base_version=candidates[0].version,
    )
    await LLMPlanMerger(client, store, feedback=OneRejection()).merge([gradient], policy, [])
    assert len(fake.chat_requests) == 2  # one proposal call, one merge call
    for request in fake.chat_requests:
        user = request.messages[1]["content"]
        assert "## Changes reviewers rejected" in user
        assert "- reservation_cancellation: rejected (upsert) by ana: compensation is for a colleague" in user
        assert "    - NEVER offer compensation" in user
    fake.push(Reply.json({"experiences": []}))
    await LLMGradientProposer(client, store).propose(trajectory, analysis, candidates)
    assert "reviewers rejected" not in fake.chat_requests[-1].messages[1]["content"]


async def test_the_merge_call_reports_contradictions_so_the_check_makes_no_call(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    """The contradiction check's question rides on the merge call (#35: no call of its own): what
    the model quotes becomes a finding when both lines are real, through the product's optimizer."""
    policy = ExperienceSetLoader(store).load_sync()
    before = store.read_uri(store.uri_for_name("experiences", "reservation_cancellation"))
    assert before is not None
    hasty = "- Cancel at once when asked, no need to confirm"
    rule = "- NEVER cancel before explicit confirmation"
    edited = before.model_copy(update={"content": before.content + "\n" + hasty})
    gradient = PatchSemanticGradient(
        before_file=before, after_file=edited, base_version=2, rationale="r", confidence=0.8
    )
    said = {"line": hasty, "other": "reservation_cancellation", "why": "it skips the confirmation"}
    merged = {
        "experiences": [
            {
                "experience_name": "reservation_cancellation",
                "content": block(
                    rule,
                    f"{rule}\n{hasty}",
                ),
                "source_gradients": [0],
                "rationale": "kept",
                "contradictions": [
                    {**said, "other_line": "NEVER cancel before explicit confirmation"},
                    {**said, "other_line": "- a line the file does not have"},
                ],
            }
        ]
    }
    fake.push(Reply.json(merged))
    plan = await PatchMergePolicyOptimizer(store, LLMPlanMerger(client, store)).plan([gradient], policy)
    [item] = plan.items
    assert len(item.metadata[REPORTED_CONTRADICTIONS]) == 2

    calls = await ModelContradictionCheck(client).mark(plan, policy, EventBus())

    assert calls == 0 and len(fake.chat_requests) == 1  # the merge call, and no other
    [finding] = item.metadata[CONTRADICTIONS]
    assert (finding["rule"], finding["other_line"], finding["by"]) == (
        hasty,
        rule,
        BY_MODEL,
    )
    assert REPORTED_CONTRADICTIONS not in item.metadata


async def test_the_models_re_proposal_of_a_rejected_rule_is_held_back_unless_evidence_is_stronger(
    fake: FakeOpenAIServer, client: LLMClient, store: MemoryStore
) -> None:
    """The model's merger brings the rejected rule back from cases the rejection never saw: held
    back from one case (the rejection had one), back and marked from two."""
    policy = ExperienceSetLoader(store).load_sync()
    current = file_from_experience(policy.by_name()["reservation_cancellation"])
    again = current.model_copy(update={"content": current.content + "\n- NEVER offer compensation"})

    def gradient(case: str) -> PatchSemanticGradient:
        return PatchSemanticGradient(
            before_file=current, after_file=again, base_version=current.version, metadata={"case_name": case}
        )

    def merged(sources: list[int]) -> Reply:
        edit = block(
            "- NEVER cancel before explicit confirmation",
            "- NEVER cancel before explicit confirmation\n- NEVER offer compensation",
        )
        found = {"experience_name": "reservation_cancellation", "content": edit, "source_gradients": sources}
        return Reply.json({"experiences": [found], "deletes": []})

    optimizer = PatchMergePolicyOptimizer(
        store, LLMPlanMerger(client, store, feedback=OneRejection()), OneRejection()
    )
    fake.push(merged([0]))
    held = await optimizer.plan([gradient("cancel_77")], policy)
    assert held.items == []
    assert held.metadata["held_back"] == [
        "reservation_cancellation: previously rejected by ana: compensation is for a colleague to decide, "
        "not a rule (plan p1, 1 case(s); again from 1: cancel_77: not stronger evidence)"
    ]
    fake.push(merged([0, 1]))
    back = await optimizer.plan([gradient("cancel_77"), gradient("cancel_78")], policy)
    (item,) = back.items
    assert item.metadata[PREVIOUSLY_REJECTED]["evidence_cases"] == ["cancel_77", "cancel_78"]
    (decision,) = ReviewPolicy("all").decisions(back)
    assert decision.decision == "pending"
    assert decision.note.startswith("held: previously rejected by ana: compensation is for a colleague")
