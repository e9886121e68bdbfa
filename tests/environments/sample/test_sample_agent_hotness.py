"""The scripted agent records a use for every experience it retrieves into a case, and mixes hotness
into its ranking by ``[retrieval] hotness_weight`` (0: lexical alone; a memory that matches nothing
is never brought in by being hot)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ovtui.core.context import ExecutionContext
from ovtui.core.domain import Case, Experience, ExperienceSet, PolicyStatus
from ovtui.environments.sample import SampleAgentExecutor
from ovtui.environments.sample.generate import generate_cases
from ovtui.memory.hotness import HotnessLog, HotnessMix
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
    log = HotnessLog(WorkspacePaths(tmp_path))
    policies = ExperienceSet(
        root_uri=ROOT, policies=[experience("cancel_rules", CANCEL), experience("manners", POLITE)]
    )
    cases = generate_cases("test", 12, 3)
    agent = SampleAgentExecutor(hotness=HotnessMix(log))
    rollouts = agent.execute_sync(cases, policies, ExecutionContext("snap"))
    used = Counter(f"{ROOT}/{name}.md" for r in rollouts for name in r.metadata["experiences_used"])
    assert used[f"{ROOT}/manners.md"] == len(cases)  # about every request: retrieved every time
    assert 0 < used[f"{ROOT}/cancel_rules.md"] < len(cases)  # only for cancellations
    assert {uri: u.count for uri, u in log.usage().items()} == dict(used)


def test_hotness_weight_reorders_equally_relevant_experiences(tmp_path: Path) -> None:
    log = HotnessLog(WorkspacePaths(tmp_path))
    first, second = experience("cancel_rules_a", CANCEL), experience("cancel_rules_b", CANCEL)
    policies = ExperienceSet(root_uri=ROOT, policies=[first, second])
    case = a_cancellation()

    def chosen(weight: float) -> list[str]:
        agent = SampleAgentExecutor(top_k=1, hotness=HotnessMix(log, weight=weight))
        [rollout] = agent.execute_sync([case], policies, ExecutionContext("snap"))
        return list(rollout.metadata["experiences_used"])

    assert chosen(0.0) == ["cancel_rules_a"]  # a tie: by name
    log.record([second.uri] * 20)
    assert chosen(0.0) == ["cancel_rules_a"]  # weight 0: hotness does not count
    assert chosen(0.5) == ["cancel_rules_b"]  # equally relevant, used more


def test_a_hot_experience_that_matches_nothing_is_not_brought_in(tmp_path: Path) -> None:
    log = HotnessLog(WorkspacePaths(tmp_path))
    unrelated = experience("pet_travel", "## Situation\n- The customer travels with a dog.\n")
    log.record([unrelated.uri] * 50)
    case = a_cancellation()
    agent = SampleAgentExecutor(hotness=HotnessMix(log, weight=1.0))
    [rollout] = agent.execute_sync(
        [case], ExperienceSet(root_uri=ROOT, policies=[unrelated]), ExecutionContext("s")
    )
    assert rollout.metadata["experiences_used"] == []
