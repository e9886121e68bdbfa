"""The verdict on one experience from its paired runs (with it, the policy again, without it), the
experiences a run chooses, and the prune plan made of the verdicts."""

from __future__ import annotations

import pytest

from ovtui.core.domain import Experience, ExperienceSet, PolicyStatus
from ovtui.core.errors import OvtuiError
from ovtui.train.paired import paired
from ovtui.train.utility import (
    Ablation,
    ExperienceUtility,
    choose,
    classify,
    prune_plan,
    utility_of,
    without,
)

K = 2.0
CASES = [f"case_{i}" for i in range(6)]


def runs(passes: dict[str, int], trials: int = 2) -> dict[str, list[int]]:
    """Each case with ``passes[case]`` of ``trials`` passed (0 for a case not named)."""
    return {c: [1] * passes.get(c, 0) + [0] * (trials - passes.get(c, 0)) for c in CASES}


ALL = dict.fromkeys(CASES, 2)
NONE: dict[str, int] = {}
STILL = paired(runs(ALL), runs(ALL))  # a null that did not move


def test_a_file_whose_removal_loses_the_cases_is_helpful() -> None:
    verdict, result = classify(runs(ALL), runs(NONE), STILL, K)
    assert verdict == "helpful" and result.delta == 1.0 and result.b_rate == 1.0 and result.a_rate == 0.0


def test_a_file_whose_removal_gains_the_cases_is_harmful() -> None:
    verdict, result = classify(runs({"case_0": 1}), runs(ALL), STILL, K)
    assert verdict == "harmful" and result.delta == pytest.approx(-11 / 12)
    assert result.ci is not None and result.ci[1] < 0


def test_no_difference_is_no_measurable_effect() -> None:
    verdict, result = classify(runs(ALL), runs(ALL), STILL, K)
    assert verdict == "none" and result.delta == 0.0


def test_a_difference_within_k_standard_errors_is_no_measurable_effect() -> None:
    # One case of six moves: Δ = 1/6 with an SE of 1/6 — not past 2·SE.
    verdict, result = classify(runs({"case_0": 2}), runs(NONE), STILL, K)
    assert result.delta == pytest.approx(1 / 6) and result.se == pytest.approx(1 / 6)
    assert verdict == "none"
    assert classify(runs({"case_0": 2}), runs(NONE), STILL, 0.5)[0] == "helpful"  # a looser k says so


def test_a_difference_no_larger_than_the_null_moved_is_no_measurable_effect() -> None:
    half = {c: 1 for c in CASES}
    noisy = paired(runs(ALL), runs(NONE))  # the same policy moved by the whole range
    assert classify(runs(half), runs(NONE), noisy, K)[0] == "none"
    assert classify(runs(half), runs(NONE), STILL, K)[0] == "helpful"


def experience(name: str, version: int = 1) -> Experience:
    return Experience(
        name=name,
        uri=f"viking://user/default/memories/experiences/{name}.md",
        version=version,
        status=PolicyStatus.DRAFT,
        content=f"## Situation\n- {name}\n",
    )


POLICY = ExperienceSet(
    root_uri="viking://user/default/memories/experiences",
    policies=[experience("refunds"), experience("greeting"), experience("cancels", 3)],
)


def test_the_entry_pairs_with_the_null_on_its_own_cases_and_counts_its_runs() -> None:
    mine = Ablation(experience("refunds"), ["case_0", "case_1"])
    with_it, lost = runs(ALL), {c: [0, 0] for c in mine.cases}
    elsewhere = {**with_it, "case_5": [0, 0]}  # the null moved, on no case of this file
    entry = utility_of(mine, (with_it, elsewhere, lost), K, 42, "policy-snapshot:x")
    assert entry.verdict == "helpful" and (entry.delta, entry.with_rate, entry.without_rate) == (
        1.0,
        1.0,
        0.0,
    )
    assert (entry.cases, entry.trials, entry.calls, entry.tokens_per_case) == (mine.cases, 2, 4, 42)
    assert entry.policy == "policy-snapshot:x" and entry.version == 1
    here = {**with_it, "case_0": [0, 0], "case_1": [0, 0]}  # the null moved as much on its cases
    assert utility_of(mine, (with_it, here, lost), K, 42, "p").verdict == "none"


def test_named_experiences_else_the_most_used_else_all() -> None:
    uses = {POLICY.policies[2].uri: 9, POLICY.policies[1].uri: 9, POLICY.policies[0].uri: 1}
    assert [e.name for e in choose(POLICY, [], 2, uses)] == ["cancels", "greeting"]  # ties by name
    assert [e.name for e in choose(POLICY, [], None, {})] == ["cancels", "greeting", "refunds"]
    assert [e.name for e in choose(POLICY, ["refunds", "refunds"], 1, uses)] == ["refunds"]
    with pytest.raises(OvtuiError, match=r"^--experience: no experience named 'nope' \(there are: cancels"):
        choose(POLICY, ["nope"], None, uses)


def test_the_policy_without_a_file_is_a_new_snapshot() -> None:
    less = without(POLICY, POLICY.policies[0])
    assert [e.name for e in less.policies] == ["greeting", "cancels"] and len(POLICY.policies) == 3
    assert less.derived("x", lambda: 1) == 1 and POLICY.derived("x", lambda: 2) == 2


def measured(name: str, verdict: str, version: int = 1) -> ExperienceUtility:
    return ExperienceUtility.model_validate(
        {
            "name": name,
            "uri": experience(name).uri,
            "version": version,
            "verdict": verdict,
            "cases": ["case_0", "case_1"],
            "trials": 1,
            "with_rate": 0.0,
            "without_rate": 1.0,
            "delta": -1.0,
            "se": 0.0,
            "ci": [-1.0, -1.0],
            "p_value": 0.5,
            "tokens_per_case": 12,
            "calls": 2,
            "policy": "policy-snapshot:x",
            "measured_at": "2026-12-01T00:00:00+00:00",
        }
    )


def test_the_prune_plan_deletes_the_harmful_and_useless_with_their_evidence() -> None:
    entries = [
        measured("refunds", "helpful"),
        measured("greeting", "none"),
        measured("cancels", "harmful", 2),
    ]
    plan = prune_plan(entries, POLICY, proposed=set())
    assert [(i.kind, i.target_name) for i in plan.items] == [("delete", "greeting")]  # cancels is at v3 now
    [item] = plan.items
    assert item.before_content == POLICY.policies[1].content and item.base_version == 1
    assert item.metadata["rationale"].startswith("utility: no measurable effect: Δ -100.0% (95% CI")
    assert "12 tokens per case" in item.metadata["rationale"] and item.metadata["utility"]["calls"] == 2
    assert plan.metadata["source"] == "utility" and plan.metadata["plan_id"]
    assert prune_plan(entries, POLICY, proposed={experience("greeting").uri}).items == []
