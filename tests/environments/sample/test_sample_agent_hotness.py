"""The scripted agent records a use for every experience it retrieves into a case, by that case's
rollout (its consumer in the use ledger), and mixes hotness into its ranking by ``[retrieval]
hotness_weight`` (0: lexical alone; a memory that matches nothing is never brought in by being hot)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, Experience, ExperienceSet, PolicyStatus
from ovtui.environments.sample import SampleAgentExecutor
from ovtui.environments.sample.generate import generate_cases
from ovtui.memory.hotness import HotnessMix
from ovtui.memory.ledger import UseLedger
from ovtui.memory.ledger_state import ROLLOUT_ID, Use, VersionUsage
from ovtui.storage.paths import WorkspacePaths

ROOT = "viking://user/default/memories/experiences"
CANCEL = """## Situation
- The customer wants to cancel a booking.
## Reflect
- ALWAYS call get_reservation to look the booking up before cancel_reservation
"""
POLITE = """## Situation
- Every conversation with a customer.
## Reflect
- ALWAYS greet the customer
"""


def experience(name: str, content: str) -> Experience:
    return Experience(
        name=name, uri=f"{ROOT}/{name}.md", version=1, status=PolicyStatus.DRAFT, content=content
    )


def a_cancellation() -> Case:
    return next(c for c in generate_cases("test", 12, 3) if c.task_signature == "booking_cancellation")


def test_each_retrieved_experience_is_a_use_per_case(tmp_path: Path) -> None:
    ledger = UseLedger(WorkspacePaths(tmp_path))
    policies = ExperienceSet(
        root_uri=ROOT, policies=[experience("cancel_rules", CANCEL), experience("manners", POLITE)]
    )
    cases = generate_cases("test", 12, 3)
    agent = SampleAgentExecutor(hotness=HotnessMix(ledger))
    rollouts = agent.execute_sync(cases, policies, ExecutionContext("snap"))
    used = Counter(f"{ROOT}/{name}.md" for r in rollouts for name in r.metadata["experiences_used"])
    assert used[f"{ROOT}/manners.md"] == len(cases)  # about every request: retrieved every time
    assert 0 < used[f"{ROOT}/cancel_rules.md"] < len(cases)  # only for cancellations
    usage = ledger.usage()
    assert {uri: u.count for uri, u in usage.items()} == dict(used)
    # each case's rollout is its own consumer, and the uses carry the version retrieved
    assert len({r.metadata[ROLLOUT_ID] for r in rollouts}) == len(cases)
    assert {uri: u.sessions for uri, u in usage.items()} == dict(used)
    assert all(u.of_version(1) == VersionUsage(u.count) for u in usage.values())


def test_without_a_ledger_the_rollouts_carry_no_consumer() -> None:
    policies = ExperienceSet(root_uri=ROOT, policies=[experience("manners", POLITE)])
    [rollout] = SampleAgentExecutor().execute_sync([a_cancellation()], policies, ExecutionContext("s"))
    assert rollout.metadata["experiences_used"] == ["manners"] and ROLLOUT_ID not in rollout.metadata


def test_hotness_weight_reorders_equally_relevant_experiences(tmp_path: Path) -> None:
    ledger = UseLedger(WorkspacePaths(tmp_path))
    first, second = experience("cancel_rules_a", CANCEL), experience("cancel_rules_b", CANCEL)
    policies = ExperienceSet(root_uri=ROOT, policies=[first, second])
    case = a_cancellation()

    def chosen(weight: float) -> list[str]:
        agent = SampleAgentExecutor(top_k=1, hotness=HotnessMix(ledger, weight=weight))
        [rollout] = agent.execute_sync([case], policies, ExecutionContext("snap"))
        return list(rollout.metadata["experiences_used"])

    assert chosen(0.0) == ["cancel_rules_a"]  # a tie: by name
    ledger.record([Use(second.uri, "session:s1")] * 20)
    assert chosen(0.0) == ["cancel_rules_a"]  # weight 0: hotness does not count
    assert chosen(0.5) == ["cancel_rules_b"]  # equally relevant, used more


def test_a_hot_experience_that_matches_nothing_is_not_brought_in(tmp_path: Path) -> None:
    ledger = UseLedger(WorkspacePaths(tmp_path))
    unrelated = experience("pet_travel", "## Situation\n- The customer travels with a dog.\n")
    ledger.record([Use(unrelated.uri, "session:s1")] * 50)
    case = a_cancellation()
    agent = SampleAgentExecutor(hotness=HotnessMix(ledger, weight=1.0))
    [rollout] = agent.execute_sync(
        [case], ExperienceSet(root_uri=ROOT, policies=[unrelated]), ExecutionContext("s")
    )
    assert rollout.metadata["experiences_used"] == []
