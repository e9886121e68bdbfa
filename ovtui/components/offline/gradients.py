"""OfflineGradientProposer: experience edits from one analysed rollout, no model.

One proposal per user intent. A successful rollout adds its tool sequence to ``## Approach``
(scoped by the situations the case declares in ``rubric.metadata["conditions"]``); every failed
rubric criterion adds a NEVER/ALWAYS rule to ``## Reflect`` worded from the criterion's
description. The request itself becomes a scrubbed example in ``## Situation`` so retrieval finds
the experience for differently worded requests. Lines already present are not added again.
"""

from __future__ import annotations

import re

from ovtui.components.backends import ExperienceProposal
from ovtui.components.offline.sections import EXAMPLE_PREFIX, SECTIONS, ExperienceSections, parse_sections
from ovtui.components.offline.steps import first_request, rollout_steps, sequence_text
from ovtui.components.offline.text import jaccard, name_tokens, scrub_specifics
from ovtui.components.offline.trajectory import OFFLINE_LABEL, task_name, task_words
from ovtui.domain import Case, CriterionResult, Experience, RolloutAnalysis, RubricCriterion, Trajectory

NAME_SIMILARITY = 0.5
_NEGATIVE = re.compile(r"^(never|do not|don't|must not|should not)\s+", re.IGNORECASE)
_POSITIVE = re.compile(r"^(always|must|should)\s+", re.IGNORECASE)
_DESCRIPTIVE = re.compile(r"^(the|a|an|its|their)\s", re.IGNORECASE)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


def rule_from_criterion(criterion: RubricCriterion | None, result: CriterionResult) -> str | None:
    """A general NEVER/ALWAYS rule for a failed criterion (ids and values scrubbed out)."""
    description = scrub_specifics(criterion.description).strip().rstrip(".") if criterion else ""
    if not description:
        return (
            f"NEVER repeat this mistake: {scrub_specifics(result.feedback[0])}" if result.feedback else None
        )
    kind = str(criterion.metadata.get("kind", "")) if criterion else ""
    negative = _NEGATIVE.match(description)
    if negative:
        return f"NEVER {description[negative.end() :]}"
    if kind.startswith("forbid"):
        return f"NEVER {_lower_first(_POSITIVE.sub('', description))}"
    positive = _POSITIVE.match(description)
    if positive:
        return f"ALWAYS {description[positive.end() :]}"
    if kind == "state" or _DESCRIPTIVE.match(description):
        return f"ALWAYS make sure {_lower_first(description)}"
    return f"ALWAYS {_lower_first(description)}"


def situation_lines(case: Case, name: str, request: str) -> list[str]:
    description = scrub_specifics(case.rubric.description).strip()
    lines = [description if description else f"The customer's request is a {task_words(name)}."]
    if request:
        lines.append(f'{EXAMPLE_PREFIX} "{scrub_specifics(request)}"')
    return lines


def approach_line(sequence: str, conditions: list[str]) -> str:
    situations = [scrub_specifics(c).strip() for c in conditions if c.strip()]
    if situations:
        return f"IF {' and '.join(situations)} THEN {sequence}"
    return f"Steps that worked: {sequence}"


def find_target(name: str, candidates: list[Experience]) -> Experience | None:
    """The candidate for the same intent: the same name, else the closest name above a threshold."""
    exact = next((c for c in candidates if c.name == name), None)
    if exact is not None:
        return exact
    wanted = name_tokens(name)
    scored = [(jaccard(wanted, name_tokens(c.name)), c.name, c) for c in candidates]
    scored = [s for s in scored if s[0] >= NAME_SIMILARITY]
    return max(scored, key=lambda s: (s[0], s[1]))[2] if scored else None


class OfflineGradientProposer:
    """GradientProposer without a model (see the module docstring for what it writes)."""

    label = OFFLINE_LABEL

    async def propose(
        self, trajectory: Trajectory, analysis: RolloutAnalysis, candidates: list[Experience]
    ) -> list[ExperienceProposal]:
        proposal = self.proposal(analysis, candidates, trajectory)
        return [proposal] if proposal is not None else []

    def proposal(
        self, analysis: RolloutAnalysis, candidates: list[Experience], trajectory: Trajectory | None = None
    ) -> ExperienceProposal | None:
        rollout, evaluation = analysis.rollout, analysis.evaluation
        name = task_name(rollout.case)
        target = find_target(name, candidates)
        before = parse_sections(target.content) if target is not None else ExperienceSections()
        after = before.copy()
        request = first_request(rollout.messages) or str(rollout.case.input.get("user_query", ""))
        for line in situation_lines(rollout.case, name, request):
            after.add("Situation", line)
        if evaluation.passed:
            sequence = sequence_text(rollout_steps(rollout.messages))
            if sequence:
                after.add(
                    "Approach",
                    approach_line(sequence, list(rollout.case.rubric.metadata.get("conditions") or [])),
                )
        criteria = {c.name: c for c in rollout.case.rubric.criteria}
        for result in evaluation.criterion_results:
            if not result.passed:
                rule = rule_from_criterion(criteria.get(result.criterion_name), result)
                if rule:
                    after.add("Reflect", rule)
        if not after.approach and not after.reflect:
            return None  # nothing learned yet: a file with only a Situation helps nobody
        if target is not None and after.same_as(before):
            return None
        added = sum(len(after.lines(s)) - len(before.lines(s)) for s in SECTIONS)
        source = f" (trajectory {trajectory.name})" if trajectory is not None else ""
        failed = sum(not r.passed for r in evaluation.criterion_results)
        verdict = (
            "succeeded" if evaluation.passed else f"failed {failed} criteri{'on' if failed == 1 else 'a'}"
        )
        return ExperienceProposal(
            experience_name=target.name if target is not None else name,
            content=after.render(),
            rationale=f"{added} new line(s): a {task_words(name)} rollout {verdict}{source}.",
        )
