"""OfflineTrajectoryExtractor: a trajectory from the tool sequence and the evaluation, no model."""

from __future__ import annotations

import re

from ovtui.plugins import Case, Rollout, RubricEvaluation, TrajectoryDraft, TrajectoryOutcome
from ovtui.plugins.wording.text import intent_name, scrub_specifics
from ovtui.train.backends.offline.conversation import is_conversation, request_example, without_user_values
from ovtui.train.backends.offline.steps import first_request, rollout_steps

OFFLINE_LABEL = "offline"
PARTIAL_SCORE = 0.5
# "Evaluation: FAILED (score 0.40)" and "[ok] criterion" add nothing to the evaluation itself.
_RESTATED = re.compile(r"^(evaluation: (passed|failed)\b|\[(ok|pass|passed)\]\s*\S+$)", re.IGNORECASE)
_MARK = re.compile(r"^\[\w+\]\s*")


def task_name(case: Case) -> str:
    """The task's snake_case name: its signature, else its rubric's name, else its name without ids."""
    for candidate in (case.task_signature, case.rubric.name, case.name):
        if candidate.strip():
            name = intent_name(candidate, fallback="")
            if name:
                return name
    return "general_request"


def task_words(name: str) -> str:
    return name.replace("_", " ")


def with_article(words: str) -> str:
    """``an email update``, ``a refund request`` (by the first letter: good enough for task names)."""
    return f"{'an' if words[:1].lower() in tuple('aeiou') else 'a'} {words}"


def outcome_of(evaluation: RubricEvaluation) -> TrajectoryOutcome:
    if evaluation.passed:
        return TrajectoryOutcome.SUCCESS
    if not evaluation.criterion_results and evaluation.score == 0:
        return TrajectoryOutcome.UNKNOWN
    return TrajectoryOutcome.PARTIAL if evaluation.score >= PARTIAL_SCORE else TrajectoryOutcome.FAILURE


def outcome_lines(evaluation: RubricEvaluation, feedback: str) -> list[str]:
    results = evaluation.criterion_results
    met = sum(r.passed for r in results)
    summary = f"{outcome_of(evaluation).value}: score {evaluation.score:.2f}"
    if results:
        summary += f", {met} of {len(results)} criteria met"
    lines = [summary]
    for result in results:
        if not result.passed:
            why = "; ".join(result.feedback) or "not met"
            lines.append(f"{result.criterion_name} failed: {scrub_specifics(why)}")
    # The caller's feedback mostly restates the evaluation read above; keep only what is new.
    known = " ".join(lines).lower()
    for raw in feedback.splitlines():
        line = raw.strip(" -")
        if _RESTATED.match(line):
            continue
        line = scrub_specifics(_MARK.sub("", line))
        if line and line.split(": ", 1)[-1].lower() not in known:
            lines.append(line)
            known += " " + line.lower()
    return lines


class OfflineTrajectoryExtractor:
    """TrajectoryExtractor without a model: Task / Steps / Outcome from what the rollout did."""

    label = OFFLINE_LABEL

    async def extract(
        self, rollout: Rollout, evaluation: RubricEvaluation, feedback: str
    ) -> list[TrajectoryDraft]:
        return [self.draft(rollout, evaluation, feedback)]

    def draft(self, rollout: Rollout, evaluation: RubricEvaluation, feedback: str = "") -> TrajectoryDraft:
        name = task_name(rollout.case)
        request = first_request(rollout.messages) or str(rollout.case.input.get("user_query", ""))
        if is_conversation(rollout.case):  # a person's own words: their values masked too
            request = request_example(rollout.case, request, rollout.messages)
        request = scrub_specifics(request)
        steps = rollout_steps(rollout.messages)
        described = [s.describe() if s.ok else self._failure(rollout, s.describe()) for s in steps]
        step_lines = [f"{i}. {d}" for i, d in enumerate(described, start=1)] or [
            "1. no tool calls; the agent only replied"
        ]
        task = f'- {task_words(name)}: "{request}"' if request else f"- {task_words(name)}"
        content = "\n".join(
            [
                "## Task",
                task,
                "## Steps",
                *step_lines,
                "## Outcome",
                *(f"- {x}" for x in outcome_lines(evaluation, feedback)),
            ]
        )
        anchor = f"{task_words(name)}: {request}" if request else task_words(name)
        return TrajectoryDraft(
            name=name, content=content, outcome=outcome_of(evaluation), retrieval_anchor=anchor[:200]
        )

    @staticmethod
    def _failure(rollout: Rollout, described: str) -> str:
        """A failed step as the tool answered it; in a person's conversation, without their values."""
        return (
            without_user_values(described, rollout.messages) if is_conversation(rollout.case) else described
        )
