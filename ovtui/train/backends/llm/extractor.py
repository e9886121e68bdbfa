"""LLMTrajectoryExtractor: one model call per rollout turns it into trajectory drafts."""

from __future__ import annotations

from ovtui.plugins import (
    CONVERSATION,
    TRAJECTORIES,
    ExtractLoop,
    InputPart,
    LLMClient,
    MemoryStore,
    MemoryTypeRegistry,
    Rollout,
    RubricEvaluation,
    TrajectoryDraft,
    TrajectoryOutcome,
)
from ovtui.train.backends.llm.render import render_evaluation, render_rollout

INSTRUCTION = """\
You turn one run of an AI agent (a rollout) into trajectory memories: what the agent did step by \
step, how it ended and why. The conversation, the rubric and the evaluation are in the input.

- Usually one trajectory per rollout; several only when the conversation handled unrelated user \
intents.
- trajectory_name: snake_case name of the kind of task (e.g. cancel_reservation), never an id, a \
person's name or another case-specific value.
- Steps: the tools called with their important inputs and results, and the replies that mattered, \
in order.
- outcome must agree with the evaluation: passed → success; failed → failure (partial when some \
required criteria passed). Quote the evaluator's feedback in the Outcome section.
- retrieval_anchor: one line that a similar future request would match.
"""


CALLER_FIELDS = frozenset({"case_name", "reward", "task_query", "case_uris", "source_archive_uri"})


def _outcome(value: object) -> TrajectoryOutcome:
    try:
        return TrajectoryOutcome(str(value))
    except ValueError:
        return TrajectoryOutcome.UNKNOWN


class LLMTrajectoryExtractor:
    label = "llm"

    def __init__(
        self,
        client: LLMClient,
        store: MemoryStore,
        *,
        registry: MemoryTypeRegistry | None = None,
        stage: str = "extract",
    ) -> None:
        self.stage = stage
        # No look-ups: past trajectories do not help describe this one, and it costs a round.
        # What the analyzer fills in from the rollout itself (its case, score, request, case files and
        # session archive) is not asked of the model.
        self.loop = ExtractLoop(
            client,
            store,
            registry or store.registry,
            [TRAJECTORIES],
            1,
            tools=False,
            caller_fields=CALLER_FIELDS,
        )

    async def extract(
        self, rollout: Rollout, evaluation: RubricEvaluation, feedback: str
    ) -> list[TrajectoryDraft]:
        # The verdict is required; the conversation is cut to fit the context window if it must be.
        inputs = [
            InputPart(render_rollout(rollout), CONVERSATION),
            InputPart(render_evaluation(evaluation, feedback), 0),
        ]
        result = await self.loop.run(self.stage, INSTRUCTION, inputs, [])
        return [
            TrajectoryDraft(
                name=op.name,
                content=op.content,
                outcome=_outcome(op.merged.get("outcome")),
                retrieval_anchor=str(op.merged.get("retrieval_anchor") or ""),
            )
            for op in result.of(TRAJECTORIES)
        ]
