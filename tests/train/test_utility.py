"""The verdict on one experience from its paired runs (with it, the policy again, without it), by
the case and corrected for the others measured with it; the experiences a run chooses; the
candidates a prune plan is made of."""

from __future__ import annotations

import pytest

from ovtui.core.domain import Experience, ExperienceSet, PolicyStatus
from ovtui.core.errors import OvtuiError
from ovtui.train.inference import MIN_INFORMATIVE, paired
from ovtui.train.pruning import PruneCheck, candidates, prune_plan
from ovtui.train.utility import (
    EQUIVALENCE,
    Ablation,
    ExperienceUtility,
    choose,
    classify,
    corrected,
    utility_of,
    without,
)

CASES = [f"case_{i:02d}" for i in range(40)]


def runs(passes: dict[str, int], trials: int = 2, cases: list[str] = CASES) -> dict[str, list[int]]:
    """Each case with ``passes[case]`` of ``trials`` passed (0 for a case not named)."""
    return {c: [1] * passes.get(c, 0) + [0] * (trials - passes.get(c, 0)) for c in cases}


ALL = dict.fromkeys(CASES, 2)
NONE: dict[str, int] = {}
STILL = paired(runs(ALL), runs(ALL))  # a null that did not move


def test_a_file_whose_removal_loses_the_cases_is_helpful() -> None:
    verdict, result, why = classify(runs(ALL), runs(NONE), STILL)
    assert verdict == "helpful" and result.delta == 1.0 and result.b_rate == 1.0 and why == ""


def test_a_file_whose_removal_gains_the_cases_is_harmful() -> None:
    verdict, result, _ = classify(runs({"case_00": 1}), runs(ALL), STILL)
    assert verdict == "harmful" and result.delta == pytest.approx(-79 / 80)
    assert result.inference.ci[1] < 0


def test_no_effect_needs_the_power_to_show_one_would_be_seen() -> None:
    verdict, result, _ = classify(runs(ALL), runs(ALL), STILL)  # 40 cases: Δ's interval within ±10 pp
    assert verdict == "none" and result.delta == 0.0
    assert max(map(abs, result.inference.ci)) <= EQUIVALENCE
    few = CASES[:30]  # the same nothing on 30 cases: ±11.6 pp, no power: unknown, never a delete
    verdict, _, why = classify(
        runs(ALL, cases=few), runs(ALL, cases=few), paired(runs(ALL, cases=few), runs(ALL, cases=few))
    )
    assert verdict == "unknown" and "interval reaches past ±10%" in why


def test_too_few_informative_cases_are_unknown() -> None:
    moved = {c: 2 for c in CASES[: MIN_INFORMATIVE - 1]}
    verdict, result, why = classify(runs(moved), runs(NONE), STILL)
    assert verdict == "unknown" and result.inference.informative == MIN_INFORMATIVE - 1
    assert f"a verdict needs at least {MIN_INFORMATIVE}" in why


def test_a_file_on_whose_cases_the_policy_moved_by_itself_is_unknown() -> None:
    noisy = paired(runs(ALL), runs(NONE))  # the same policy moved by the whole range
    verdict, _, why = classify(runs(ALL), runs(NONE), noisy)
    assert verdict == "unknown" and "unstable" in why


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
    mine = Ablation(experience("refunds"), CASES[:8])
    with_it, lost = runs(ALL), {c: [0, 0] for c in mine.cases}
    elsewhere = {**with_it, "case_30": [0, 0]}  # the null moved, on no case of this file
    entry = utility_of(mine, (with_it, elsewhere, lost), 42, "policy-snapshot:x")
    assert entry.verdict == "helpful" and (entry.delta, entry.with_rate, entry.without_rate) == (
        1.0,
        1.0,
        0.0,
    )
    assert (entry.cases, entry.trials, entry.calls, entry.tokens_per_case) == (mine.cases, 2, 16, 42)
    assert entry.policy == "policy-snapshot:x" and entry.version == 1 and entry.informative == 8
    here = {**with_it, **{c: [0, 0] for c in CASES[:7]}}  # the null moved as much on its cases
    assert utility_of(mine, (with_it, here, lost), 42, "p").verdict == "unknown"
    two = Ablation(experience("refunds"), CASES[:2])
    little = utility_of(two, (with_it, with_it, lost), 42, "p")
    assert little.verdict == "unknown" and "a verdict needs at least 6" in little.why  # two cases


def test_verdicts_are_corrected_together_and_put_on_one_scale() -> None:
    strong = Ablation(experience("refunds"), CASES[:12])
    weak = Ablation(experience("greeting"), CASES[12:18])  # six of six: p = .031 alone
    with_it = runs(ALL)
    lost = {c: [0, 0] for c in CASES}
    entries = [utility_of(a, (with_it, with_it, lost), 1, "p") for a in (strong, weak)]
    assert [e.verdict for e in entries] == ["helpful", "helpful"] and entries[1].p_value == pytest.approx(
        1 / 32
    )
    corrected(entries, policy_gain=0.5, measured=40)
    assert entries[1].q_value == pytest.approx(1 / 32)  # BH: the largest p stays itself
    assert entries[0].verdict == entries[1].verdict == "helpful"
    assert entries[0].effect == pytest.approx(12 / 40) and entries[0].share == pytest.approx(0.6)
    flat = Ablation(experience("x"), CASES[18:40])
    several = [utility_of(weak, (with_it, with_it, lost), 1, "p") for _ in range(2)]
    several += [utility_of(flat, (with_it, with_it, with_it), 1, "p") for _ in range(2)]
    corrected(several, policy_gain=None, measured=40)
    assert several[0].q_value == pytest.approx(1 / 32 * 4 / 2)  # q ≥ α: no longer a verdict
    assert several[0].verdict == "unknown" and "once 4 tests are corrected" in several[0].why
    assert several[0].share is None and "Benjamini–Hochberg q=" in several[0].line()


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


def measured(name: str, verdict: str, version: int = 1, delta: float = 0.0) -> ExperienceUtility:
    return ExperienceUtility.model_validate(
        {
            "name": name,
            "uri": experience(name).uri,
            "version": version,
            "verdict": verdict,
            "cases": ["case_00", "case_01"],
            "trials": 1,
            "with_rate": 0.0,
            "without_rate": 1.0,
            "delta": delta,
            "se": 0.0,
            "ci": [-0.05, 0.05],
            "p_value": 1.0,
            "tokens_per_case": 12,
            "calls": 2,
            "policy": "policy-snapshot:x",
            "measured_at": "2026-12-01T00:00:00+00:00",
        }
    )


def test_the_candidates_are_the_harmful_then_the_useless_as_measured() -> None:
    entries = [
        measured("refunds", "helpful"),
        measured("greeting", "none"),
        measured("cancels", "harmful", 2),  # at v3 now
        measured("unsure", "unknown"),
    ]
    policy = ExperienceSet(root_uri=POLICY.root_uri, policies=[*POLICY.policies, experience("unsure")])
    assert [e.name for e in candidates(entries, policy, proposed=set())] == ["greeting"]
    fresh = [measured("cancels", "harmful", 3, delta=-0.5), *entries[:2]]
    assert [e.name for e in candidates(fresh, policy, set())] == ["cancels", "greeting"]
    assert candidates(entries, policy, proposed={experience("greeting").uri}) == []


def test_the_prune_plan_says_it_was_checked_together() -> None:
    check = PruneCheck(deleted=[measured("greeting", "none")], cases=2, delta=0.0)
    plan = prune_plan(check, POLICY)
    [item] = plan.items
    assert (item.kind, item.target_name, item.base_version) == ("delete", "greeting", 1)
    assert item.before_content == POLICY.policies[1].content
    assert item.metadata["rationale"].startswith("utility: no measurable effect: Δ +0.0% (95% CI")
    assert "measured one at a time, checked together" in item.metadata["rationale"]
    assert "12 tokens per case" in item.metadata["rationale"] and item.metadata["utility"]["calls"] == 2
    assert plan.metadata["source"] == "utility" and plan.metadata["checked_together"]["cases"] == 2
