"""The ``openai`` backend's entry point: the model (``[llm]``, any OpenAI-compatible endpoint)
extracts trajectories, proposes and merges edits, and reads committed sessions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ovtui.plugins import Backend, Backends

if TYPE_CHECKING:
    from ovtui.plugins import Resources


def _build(resources: Resources) -> Backends:
    from ovtui.train.backends.llm import LLMGradientProposer, LLMPlanMerger, LLMTrajectoryExtractor
    from ovtui.train.backends.llm.session_extractor import LLMSessionExtractor

    client, store, feedback = resources.llm(), resources.store, resources.review_feedback()
    return Backends(
        LLMTrajectoryExtractor(client, store),
        LLMGradientProposer(client, store, feedback=feedback),
        LLMPlanMerger(client, store, feedback=feedback),
        LLMSessionExtractor(client, store, resources.hotness()),
    )


backend = Backend(
    label="llm",
    uses_model=True,
    build=_build,
    description="the [llm] model extracts trajectories, proposes and merges edits, reads sessions",
)
