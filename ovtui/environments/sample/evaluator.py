"""Deterministic grading of a sample-environment rollout against its case's rubric.

``grade`` needs the final database; ``SampleEvaluator`` (the RolloutEvaluator Protocol) gets it
by replaying the rollout's completed tool calls on a fresh copy of the case's seed, so a rollout
read back from a file is graded exactly like one fresh from the agent.
"""

from __future__ import annotations

from ovtui.environments.sample.criteria import Transcript, check_criterion
from ovtui.environments.sample.tools import Database, SupportTools, copy_database
from ovtui.plugins import Case, Message, Rollout, RubricEvaluation


def seed_database(case: Case) -> Database:
    return copy_database(case.input.get("db") or {})


def replay(case: Case, messages: list[Message]) -> Database:
    """The database after re-running every completed tool call of ``messages`` in order."""
    db = seed_database(case)
    tools = SupportTools(db)
    for message in messages:
        for call in message.tool_parts:
            if call.tool_status == "completed":
                tools.call(call.tool_name, call.tool_input)
    return db


def grade(case: Case, messages: list[Message], final_db: Database) -> RubricEvaluation:
    criteria = case.rubric.criteria
    if not criteria:
        return RubricEvaluation(
            passed=False, score=0.0, feedback=[f"case {case.name} has no rubric criteria"]
        )
    transcript = Transcript(messages)
    results = [check_criterion(c, transcript, final_db) for c in criteria]
    total_weight = sum(c.weight for c in criteria) or 1.0
    score = sum(c.weight * r.score for c, r in zip(criteria, results, strict=True)) / total_weight
    passed = all(r.passed for c, r in zip(criteria, results, strict=True) if c.required)
    feedback = [f"{r.criterion_name}: {line}" for r in results if not r.passed for line in r.feedback]
    return RubricEvaluation(
        passed=passed,
        score=round(score, 6),
        criterion_results=results,
        feedback=feedback,
        metadata={
            "evaluator": "sample_env",
            "criteria_passed": sum(r.passed for r in results),
            "criteria": len(results),
        },
    )


class SampleEvaluator:
    """RolloutEvaluator for sample-environment cases: re-grades from the messages alone."""

    async def evaluate(self, rollout: Rollout) -> RubricEvaluation:
        return self.evaluate_sync(rollout)

    def evaluate_sync(self, rollout: Rollout) -> RubricEvaluation:
        return grade(rollout.case, rollout.messages, replay(rollout.case, rollout.messages))
