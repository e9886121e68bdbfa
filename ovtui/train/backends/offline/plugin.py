"""The ``offline`` backend's entry point: deterministic extraction, proposal, merging and session
reading, no model and no network."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ovtui.plugins import Backend, Backends

if TYPE_CHECKING:
    from ovtui.plugins import Resources


def _build(resources: Resources) -> Backends:
    from ovtui.train.backends.offline import (
        OfflineGradientProposer,
        OfflinePlanMerger,
        OfflineTrajectoryExtractor,
    )
    from ovtui.train.backends.offline.session_extractor import OfflineSessionExtractor

    return Backends(
        OfflineTrajectoryExtractor(),
        OfflineGradientProposer(resources.review_feedback()),
        OfflinePlanMerger(),
        OfflineSessionExtractor(),
    )


backend = Backend(
    label="offline",
    uses_model=False,
    build=_build,
    description="deterministic extraction, proposal, merging and session reading; no model, no network",
)
