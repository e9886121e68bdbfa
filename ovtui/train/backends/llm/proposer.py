"""LLMGradientProposer: one model call per trajectory proposes experience edits.

The candidates the shell found (at most five) are prefetched with the exact content the shell
will use as the base, so an edit is checked — and its SEARCH/REPLACE blocks resolved — against
that base. The proposal's ``content`` is therefore always the complete new text.
"""

from __future__ import annotations

from typing import Any

from ovtui.plugins import (
    CONVERSATION,
    EXPERIENCES,
    Experience,
    ExperienceProposal,
    ExtractLoop,
    InputPart,
    LLMClient,
    MemoryStore,
    MemoryTypeRegistry,
    RejectionSource,
    RolloutAnalysis,
    Trajectory,
    file_from_experience,
)
from ovtui.train.backends.llm.render import render_evaluation, render_rejections, render_trajectory

MAX_CANDIDATES = 5

INSTRUCTION = """\
You improve an AI agent's experience memory from one trajectory (what the agent did in one task \
and how it was judged). An experience is reusable guidance for ONE user intent, in the three \
sections of its content template (below).

Decide against the candidate experiences shown:
- update a candidate whose user intent this trajectory shares (SEARCH/REPLACE blocks copied from \
its current content, or its complete new text), keeping what it says unless the trajectory shows \
it is wrong;
- create a new experience when no candidate covers the intent;
- propose nothing when the trajectory teaches nothing new.
Rules: one user intent per experience; when unsure whether two intents are the same, split (create \
a new one) rather than merge. A success teaches the Approach (its tool sequence); a failure teaches \
Reflect (what to never do again) and, if the evaluation shows it, the right Approach. Never write \
case-specific values (ids, names, amounts, dates): generalise them. Give a one-sentence rationale \
per item.
"""

RATIONALE: dict[str, dict[str, Any]] = {
    "rationale": {"type": "string", "description": "one sentence: why this change, from this trajectory"}
}


class LLMGradientProposer:
    label = "llm"

    def __init__(
        self,
        client: LLMClient,
        store: MemoryStore,
        *,
        registry: MemoryTypeRegistry | None = None,
        max_iterations: int = 2,
        stage: str = "propose",
        feedback: RejectionSource | None = None,
    ) -> None:
        self.stage = stage
        self.feedback = feedback  # what reviewers rejected, shown with their reasons
        self.loop = ExtractLoop(
            client, store, registry or store.registry, [EXPERIENCES], max_iterations, item_extras=RATIONALE
        )

    async def propose(
        self, trajectory: Trajectory, analysis: RolloutAnalysis, candidates: list[Experience]
    ) -> list[ExperienceProposal]:
        files = [file_from_experience(e) for e in candidates[:MAX_CANDIDATES]]
        inputs = [
            InputPart(render_trajectory(trajectory), CONVERSATION),
            InputPart(render_evaluation(analysis.evaluation), 0),
        ]
        rejected = render_rejections(self.feedback, [e.name for e in candidates[:MAX_CANDIDATES]])
        if rejected:
            inputs.append(InputPart(rejected, 0))
        result = await self.loop.run(self.stage, INSTRUCTION, inputs, [], prefetch_files=files)
        return [
            ExperienceProposal(
                experience_name=op.name,
                content=op.content,
                status=str(op.fields["status"]) if op.fields.get("status") else None,
                rationale=str(op.extras.get("rationale") or ""),
            )
            for op in result.of(EXPERIENCES)
        ]
